"""Loud failures: a run whose memory pipeline mostly failed says so in its summary line, in a
warning on stderr, with exit 4, in the report's header, and at the gate."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

import memeval.runner
from memeval.baseline import Baseline
from memeval.cli.app import EXIT_UNHEALTHY, app
from memeval.finish import EXIT_UNHEALTHY as FINISH_EXIT_UNHEALTHY
from memeval.health import FIX, run_health
from memeval.rundir.record import read_run
from memeval.rundir.saved import SavedRun
from tests.memeval.report.html import by_id, parse, text_of
from tests.memeval.rundirs import (
    RunDirBuilder,
    build_sample_run,
    grade_and_save,
    memory,
    report_of,
)

REFUSED = "Connection error: [Errno 111] Connection refused"
SAMPLE_LINE = (
    "write-match 6/8 · memory-dependent 1/1 · memory-corruptible 0/1 · compactions 1 "
    "(reached target 1) · dropped writes 1 · model calls/turn 1.8 · tokens/turn 1,405 · "
    "pipeline p50/p95 1.5/1.5 s (with compaction 6.0/6.0 s)"
)


def pipeline_run(path: Path, failed: int, turns: int = 7, run_id: str = "run") -> Path:
    """One scenario of `turns` seed turns whose first `failed` updates failed: the updater's
    calls were refused (two calls per failed turn: the first attempt and its retry)."""
    run = RunDirBuilder(path, run_id=run_id)
    sc = run.scenario("book", facts={"score": {"match": ["0.648"]}})
    ok = memory(Goals=["- v2 scored 0.648"])
    for i in range(turns):
        if i < failed:
            calls = [
                {"role": "summarizer", "model": "m", "prompt_tokens": 10},
                {"role": "updater", "model": "m", "error": REFUSED},
                {"role": "updater", "model": "m", "error": REFUSED},
            ]
            sc.turn(
                f"s1t{i}",
                status="failed",
                file=ok if i else None,
                calls=calls,
                extra_update={"errors": [f"updater: {REFUSED}"]},
            )
        else:
            calls = [
                {"role": "summarizer", "model": "m", "prompt_tokens": 10},
                {"role": "updater", "model": "m", "prompt_tokens": 20},
            ]
            sc.turn(f"s1t{i}", file=ok, calls=calls, expect={"records": ["score"]})
    return run.write()


def fake_run(monkeypatch: pytest.MonkeyPatch, run_dir: Path) -> None:
    """`memeval run` plays no turns: its runner returns the hand-made run directory."""
    outcome = SimpleNamespace(run_dir=run_dir, info=read_run(run_dir))
    monkeypatch.setattr(memeval.runner, "run", lambda options: outcome)


def memeval_run(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        app,
        [
            "run",
            "book",
            "--model",
            "fake",
            "--no-judge",
            "--no-progress",
            "--out",
            str(tmp_path),
            *args,
        ],
        env={"COLUMNS": "400"},
    )
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def test_the_account_counts_failed_updates_and_call_errors_per_role(tmp_path: Path) -> None:
    health = run_health(SavedRun.open(pipeline_run(tmp_path / "run", failed=5)))
    book = health.of("book")
    assert book is not None
    assert (book.updates, book.failed, book.rejected, book.blocked_ops) == (7, 5, 0, 0)
    updater = book.roles["updater"]
    assert (updater.errored, updater.made, updater.commonest_error) == (10, 12, REFUSED)
    assert book.roles["summarizer"].errored == 0
    assert book.figures() == ["memory updates failed 5/7", "updater call errors 10/12"]
    assert health.unhealthy and [r.role for r in health.failing_roles] == ["updater"]


def test_a_minority_of_failures_is_shown_but_not_unhealthy(tmp_path: Path) -> None:
    health = run_health(SavedRun.open(pipeline_run(tmp_path / "run", failed=2)))
    assert health.of("book").figures() == [  # type: ignore[union-attr]
        "memory updates failed 2/7",
        "updater call errors 4/9",
    ]
    assert not health.unhealthy and health.warning_lines() == []


def test_a_run_whose_every_update_failed_warns_and_exits_4(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert EXIT_UNHEALTHY == FINISH_EXIT_UNHEALTHY == 4
    fake_run(monkeypatch, pipeline_run(tmp_path / "run", failed=7))
    code, out, err = memeval_run(tmp_path)
    assert code == 4, out + err
    (line,) = [x for x in out.splitlines() if x.startswith("book: ")]
    assert line.startswith("book: memory updates failed 7/7 · updater call errors 14/14 · ")
    assert "write-match" in line
    assert err.splitlines() == [
        "warning: the memory pipeline failed on most of this run; its scores measure the "
        "failures, not the memory design",
        "  memory updates failed 7/7",
        f"  updater: 14/14 calls errored; commonest error: {REFUSED}",
        f"  fix: {FIX}",
    ]
    assert "OPENAI_BASE_URL" in FIX


def test_a_healthy_run_prints_what_it_printed_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_run(monkeypatch, build_sample_run(tmp_path / "run"))
    code, out, err = memeval_run(tmp_path)
    assert code == 0, out + err
    assert err == ""
    (line,) = [x for x in out.splitlines() if x.startswith("book-summary: ")]
    assert line == f"book-summary: {SAMPLE_LINE}"
    assert "failed" not in out and "warning" not in out


def test_run_help_documents_exit_4() -> None:
    result = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "4 the memory pipeline failed on most of the run" in " ".join(result.stdout.split())


def test_the_report_header_shows_the_figures_in_a_warning(tmp_path: Path) -> None:
    run_dir = pipeline_run(tmp_path / "run", failed=7)
    asyncio.run(grade_and_save(run_dir))
    elements = parse(report_of(run_dir).read_text(encoding="utf-8"))
    row = by_id(elements, "pipeline-health")
    assert "memory updates failed 7/7 · updater call errors 14/14" in text_of(row)
    (chip,) = [e for e in elements if e.get("data-health") == "book"]
    assert "unhealthy" in chip.classes
    warning = by_id(elements, "health-warning")
    assert "unhealthy" in warning.classes
    text = text_of(warning)
    assert "updater: 14/14 calls errored" in text and REFUSED in text and "OPENAI_BASE_URL" in text


def test_a_healthy_report_says_nothing_failed(tmp_path: Path) -> None:
    run_dir = pipeline_run(tmp_path / "run", failed=0)
    asyncio.run(grade_and_save(run_dir))
    elements = parse(report_of(run_dir).read_text(encoding="utf-8"))
    (chip,) = [e for e in elements if e.get("data-health") == "book"]
    assert "unhealthy" not in chip.classes
    assert "7 memory updates, none failed; 14 model calls, none errored" in text_of(chip)
    assert not [e for e in elements if e.get("id") == "health-warning"]


def test_hostile_error_text_renders_inert(tmp_path: Path) -> None:
    x = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    run = RunDirBuilder(tmp_path / "run")
    run.scenario("book").turn("s1t1", status="failed", calls=[{"role": "updater", "error": x}])
    run_dir = run.write()
    asyncio.run(grade_and_save(run_dir))
    html = report_of(run_dir).read_text(encoding="utf-8")
    assert "<script>alert(1)" not in html and "<img src=x" not in html
    elements = parse(html)
    assert not [e for e in elements if e.tag == "img"]
    assert x in text_of(by_id(elements, "health-warning"))


def gate(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["gate", *map(str, args)], env={"COLUMNS": "400"})
    return result.exit_code, result.stdout, result.stderr


def graded(path: Path, failed: int) -> Path:
    run_dir = pipeline_run(path, failed)
    asyncio.run(grade_and_save(run_dir))
    return run_dir


def test_the_baseline_keeps_the_counts_and_the_gate_fails_on_more(tmp_path: Path) -> None:
    base = graded(tmp_path / "base", failed=1)
    file = tmp_path / "baseline.json"
    assert gate(base, "--write-baseline", file)[0] == 0
    (counts,) = json.loads(file.read_text())["health"]
    assert counts == {
        "scenario": "book",
        "updates": 7,
        "failed_updates": 1,
        "calls": 15,
        "call_errors": 2,
    }
    assert gate(graded(tmp_path / "same", failed=1), "--baseline", file)[0] == 0
    assert gate(graded(tmp_path / "better", failed=0), "--baseline", file)[0] == 0
    code, out, err = gate(graded(tmp_path / "worse", failed=3), "--baseline", file)
    assert code == 1, out
    assert "regression: book failed_updates, book model_call_errors" in err
    assert "more than the baseline had" in out


def test_an_older_baseline_without_counts_is_not_compared_and_says_so(tmp_path: Path) -> None:
    base = graded(tmp_path / "base", failed=0)
    file = tmp_path / "baseline.json"
    gate(base, "--write-baseline", file)
    data = json.loads(file.read_text())
    del data["health"]
    file.write_text(json.dumps(data))
    code, out, _ = gate(graded(tmp_path / "worse", failed=3), "--baseline", file)
    # the failed updates lose write checks too: only pass-rate deltas can fail this gate
    assert "failed_updates" not in out and "model_call_errors" not in out
    assert "no pipeline health counts" in " ".join(out.split())
    assert code == 0, out


def test_the_committed_ci_baseline_loads_with_and_without_health(tmp_path: Path) -> None:
    path = Path(__file__).resolve().parents[2] / "ci" / "memeval-baseline.json"
    baseline = Baseline.model_validate_json(path.read_text(encoding="utf-8"))
    assert baseline.metrics and baseline.health  # written with health counts
    older = json.loads(path.read_text(encoding="utf-8"))
    del older["health"]  # as written before health counts
    baseline = Baseline.model_validate_json(json.dumps(older))
    assert baseline.metrics and baseline.health is None
