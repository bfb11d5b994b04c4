"""The rule the README states, enforced: prompts, pipeline code or scenarios do not change
without `ci/memeval-baseline.json` being refreshed in the same change.

The committed baseline's fingerprint (made by the run it came from) is compared with the
prompts, code and scenario files of this checkout; on failure the message names what changed
and the commands that refresh the baseline. The second half shows the check failing on a
prompt edit made in a copy of the source tree, and passing again after a refresh.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memeval.cli import app
from memeval.freshness import stale_baseline
from memeval.rundir.fingerprint import Fingerprint, make_fingerprint
from memeval.rundir.record import read_run, write_run
from memeval.scenario.loader import resolve
from tests.memeval.rundirs import RunDirBuilder, grade_and_save

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "ci" / "memeval-baseline.json"
LOCAL = {"spec": "local:qwen2.5-coder-1.5b", "backend": "local", "threads": 2}


def test_the_committed_baseline_matches_the_prompts_code_and_scenarios() -> None:
    problems = stale_baseline(Path(os.path.relpath(BASELINE)), scenario_dir=ROOT / "scenarios")
    assert not problems, "\n".join(problems)


# --- the check itself, on a copy of the source tree ---------------------------------------------


def copy_tree(dest: Path) -> dict[str, Path]:
    ignore = shutil.ignore_patterns("__pycache__", "_scenarios")
    for name in ("reference_memory", "memeval", "scenarios"):
        shutil.copytree(ROOT / name, dest / name, ignore=ignore)
    return {"reference_memory": dest / "reference_memory", "memeval": dest / "memeval"}


def run_of(tree: Path, roots: dict[str, Path], name: str) -> Path:
    """A graded run of book-summary whose run.json carries the copy's fingerprint, as
    `memeval run` would have written it from that tree."""
    run = RunDirBuilder(tree / "reports" / name, run_id=name)
    sc = run.scenario("book-summary", facts={"rows": {"match": ["70 rows"]}})
    sc.turn("s1t1", file="## Conventions\n- [user] 70 rows\n", expect={"records": ["rows"]})
    run_dir = run.write()
    info = read_run(run_dir)
    info.argv = ["run", "book-summary", "--out", str(tree / "reports")]
    info.fingerprint = make_fingerprint(
        scenario_files={"book-summary": resolve(tree / "scenarios" / "book-summary.yaml").files},
        model_info={"agent": LOCAL, "updater": LOCAL},
        settings={"memory": "file"},
        roots=roots,
    )
    write_run(run_dir, info)
    import asyncio

    asyncio.run(grade_and_save(run_dir))
    return run_dir


def refresh(run_dir: Path, baseline: Path) -> None:
    result = CliRunner().invoke(app, ["gate", str(run_dir), "--write-baseline", str(baseline)])
    assert result.exit_code == 0, result.output


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, dict[str, Path], Path]:
    roots = copy_tree(tmp_path)
    baseline = tmp_path / "ci" / "memeval-baseline.json"
    baseline.parent.mkdir()
    refresh(run_of(tmp_path, roots, "first"), baseline)
    return tmp_path, roots, baseline


def test_a_prompt_edit_without_a_refresh_fails_the_check(
    tree: tuple[Path, dict[str, Path], Path],
) -> None:
    root, roots, baseline = tree
    check = {"roots": roots, "scenario_dir": root / "scenarios"}
    assert stale_baseline(baseline, **check) == []

    prompt = root / "reference_memory" / "prompts" / "summarizer_system.j2"
    prompt.write_text(prompt.read_text(encoding="utf-8") + "Be brief.\n", encoding="utf-8")
    [problem] = stale_baseline(baseline, **check)
    assert "prompts changed since its run" in problem
    assert "reference_memory/prompts/summarizer_system.j2 (changed)" in problem
    assert (
        f"memeval run book-summary --no-cache`, then `memeval gate reports/<run-id> "
        f"--write-baseline {baseline}`" in problem
    )

    refresh(run_of(root, roots, "second"), baseline)  # the refresh the message asks for
    assert stale_baseline(baseline, **check) == []


def test_code_and_scenario_edits_fail_it_and_other_files_do_not(
    tree: tuple[Path, dict[str, Path], Path],
) -> None:
    root, roots, baseline = tree
    check = {"roots": roots, "scenario_dir": root / "scenarios"}
    (root / "memeval" / "report" / "templates" / "report.html.j2").write_text("changed\n")
    (root / "memeval" / "cli" / "gate_cmd.py").write_text("# changed\n")
    assert stale_baseline(baseline, **check) == []  # neither changes what a run computes

    (root / "reference_memory" / "new_step.py").write_text("STEP = 1\n")
    yaml = root / "scenarios" / "book-summary.yaml"
    yaml.write_text(yaml.read_text(encoding="utf-8") + "\n# a comment\n", encoding="utf-8")
    problems = stale_baseline(baseline, **check)
    assert [p.split(" changed since")[0] for p in problems] == [
        f"{baseline}: pipeline code",
        f"{baseline}: scenario book-summary",
    ]
    assert "reference_memory/new_step.py (added)" in problems[0]


def test_crlf_checkouts_hash_like_lf_ones(tree: tuple[Path, dict[str, Path], Path]) -> None:
    root, roots, baseline = tree
    prompt = root / "reference_memory" / "prompts" / "summarizer_system.j2"
    prompt.write_bytes(prompt.read_bytes().replace(b"\n", b"\r\n"))
    assert stale_baseline(baseline, roots=roots, scenario_dir=root / "scenarios") == []


def test_a_baseline_without_fingerprint_says_what_to_run(tmp_path: Path) -> None:
    # a baseline from before fingerprints: the committed one with its fingerprint taken out
    data = json.loads(BASELINE.read_text("utf-8"))
    data.pop("fingerprint", None)
    old = tmp_path / "memeval-baseline.json"
    old.write_text(json.dumps(data), "utf-8")
    [problem] = stale_baseline(old, scenario_dir=ROOT / "scenarios")
    assert problem == (
        f"{old} has no fingerprint (made before memeval recorded one), so nothing shows which "
        "prompts and code it gates; refresh it: `memeval run combined --no-cache`, then "
        f"`memeval gate reports/<run-id> --write-baseline {old}`, and commit it"
    )


def test_the_refresh_path_writes_everything_the_check_needs(tmp_path: Path) -> None:
    """A real `memeval run` (on the fake stand-in) and --write-baseline: fresh against this
    checkout, and a fake baseline is refused unless allowed."""
    runner = CliRunner()
    result = runner.invoke(
        app, ["run", "book-summary", "--model", "fake", "--out", str(tmp_path), "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    fingerprint = read_run(run_dir).fingerprint
    assert isinstance(fingerprint, Fingerprint) and fingerprint.cache is not None
    baseline = tmp_path / "baseline.json"
    refresh(run_dir, baseline)
    assert stale_baseline(baseline, scenario_dir=ROOT / "scenarios", allow_fake=True) == []
    [fake] = stale_baseline(baseline, scenario_dir=ROOT / "scenarios")
    assert "made with the fake stand-in" in fake
