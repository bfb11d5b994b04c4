"""`memeval run --memory a,b,c`: several memory systems on the same scenarios in one run
directory, each a complete run, side by side in comparison.csv and the comparison page."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memeval.cli import app
from memeval.rundir.comparison import read_comparison
from memeval.rundir.record import read_run
from tests.memeval.report.conftest import chromium

MINI = Path(__file__).parent / "runner" / "mini.yaml"
SYSTEMS = ["file", "retrieval", "core-search"]


def run_cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def comparison(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cmp")
    code, output = run_cli(
        "run", str(MINI), "--memory", ",".join(SYSTEMS), "--model", "fake", "--out", str(out),
        "--no-progress",
    )  # fmt: skip
    assert code == 0, output
    (path,) = [p for p in out.iterdir() if p.is_dir()]
    return path


def test_each_system_is_a_complete_graded_run_in_one_directory(comparison: Path) -> None:
    info = read_comparison(comparison)
    assert [s.system for s in info.systems] == SYSTEMS
    assert info.scenarios == ["mini"]
    for entry in info.systems:
        sub = comparison / entry.directory
        run = read_run(sub)
        assert (run.memory, run.status) == (entry.system, "complete")
        assert (sub / "verdicts.json").is_file() and (sub / "report.html").is_file()
        assert entry.exit_code == 0
    retrieval = read_run(comparison / "retrieval")
    assert retrieval.memory_settings["k"] >= 1  # what shapes retrieval's results is recorded
    assert "budget_chars" in retrieval.memory_settings
    assert read_run(comparison / "file").memory_settings == {}


def test_one_summary_row_per_scenario_and_system(comparison: Path) -> None:
    with (comparison / "comparison.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [(r["scenario"], r["system"]) for r in rows] == [("mini", s) for s in SYSTEMS]
    for row in rows:
        assert row["memory_dependent"].endswith("/1")
        assert row["memory_corruptible"].endswith("/1")
        assert float(row["model_calls_per_turn"]) > 0  # the fake model is still called
        assert row["run_dir"] == row["system"]


def test_the_gate_works_on_each_system(comparison: Path, tmp_path: Path) -> None:
    baseline = tmp_path / "retrieval-baseline.json"
    code, output = run_cli("gate", str(comparison / "retrieval"), "--write-baseline", str(baseline))
    assert code == 0, output
    assert json.loads(baseline.read_text())["metrics"][0]["scenario"] == "mini"
    code, output = run_cli("gate", str(comparison / "retrieval"), "--baseline", str(baseline))
    assert code == 0, output


def test_report_regenerates_the_comparison_page(comparison: Path) -> None:
    page = comparison / "report.html"
    page.unlink()
    code, output = run_cli("report", str(comparison))
    assert code == 0, output
    html = page.read_text(encoding="utf-8")
    for system in SYSTEMS:
        assert f'href="{system}/report.html"' in html
    assert "stored, not served" in html


def test_resume_runs_only_the_systems_that_did_not_finish(comparison: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(comparison, copy)
    shutil.rmtree(copy / "core-search")  # as if the run died before its last system
    kept = (copy / "file" / "events.jsonl").read_bytes()
    code, output = run_cli("run", "--resume", str(copy), "--model", "fake", "--no-progress")
    assert code == 0, output
    assert read_run(copy / "core-search").status == "complete"
    assert (copy / "file" / "events.jsonl").read_bytes() == kept  # finished systems untouched


@pytest.mark.parametrize(
    ("memory", "says"),
    [
        ("file,,retrieval", "empty item"),
        ("file,file", "twice"),
        ("file,bogus", "unknown memory system 'bogus'"),
        # Mem0 calls its LLM over HTTP: a fake updater is refused before `file` runs
        ("file,mem0", "--memory mem0 needs the updater role on openai:MODEL or local:NAME"),
    ],
)
def test_a_bad_system_list_is_one_line_and_writes_nothing(
    tmp_path: Path, memory: str, says: str
) -> None:
    out = tmp_path / "reports"
    code, output = run_cli(
        "run", str(MINI), "--memory", memory, "--model", "fake", "--out", str(out)
    )
    assert code == 2, output
    assert says in output and len(output.strip().splitlines()) == 1
    assert not out.exists() or not any(out.iterdir())


def test_gate_options_are_refused_with_a_comma_list(tmp_path: Path) -> None:
    code, output = run_cli(
        "run", str(MINI), "--memory", "file,retrieval", "--model", "fake",
        "--baseline", str(tmp_path / "b.json"), "--out", str(tmp_path / "reports"),
    )  # fmt: skip
    assert code == 2, output
    assert "--baseline works on one system's run" in output
    assert not (tmp_path / "reports").exists()


@pytest.mark.browser
def test_the_comparison_page_renders_in_a_browser(comparison: Path) -> None:
    with chromium() as browser:
        page = browser.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((comparison / "report.html").as_uri())
        rows = page.locator("table.systems tbody tr")
        assert rows.count() == len(SYSTEMS)
        assert [rows.nth(i).locator("th").nth(1).inner_text().strip() for i in range(3)] == SYSTEMS
        questions = page.locator("table.questions tbody tr")
        assert questions.count() == 2  # mini's two questions
        assert questions.first.locator("td .badge").count() == len(SYSTEMS)
        assert page.locator("table.meaning tbody tr").count() == len(SYSTEMS)
        page.locator('a[href="retrieval/report.html"]').first.click()
        page.wait_for_load_state()
        assert page.url.endswith("retrieval/report.html")
        assert page.locator("article.card").count() > 0
        assert errors == []


def test_gate_on_the_comparison_directory_names_the_system_runs(comparison: Path) -> None:
    code, output = run_cli("gate", str(comparison), "--write-baseline", str(comparison / "b.json"))
    assert code == 2
    assert "a comparison of several memory systems" in output
    assert f"{comparison / 'file'} (or retrieval, core-search)" in " ".join(output.split())
    assert not (comparison / "b.json").exists()


def test_a_system_replayed_from_the_cache_says_its_latency_was_not_measured() -> None:
    from memeval.report.comparison import SystemRow
    from memeval.rundir.results import ScenarioMetrics

    def row(hits: int, calls: int) -> SystemRow:
        metrics = ScenarioMetrics(scenario="combined")
        return SystemRow("combined", "file", "file", metrics, cached_calls=(hits, calls))

    assert row(315, 317).latency_replayed
    assert not row(1, 227).latency_replayed and not row(0, 0).latency_replayed
