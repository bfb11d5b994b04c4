"""`memeval compare` and `memeval report` on hand-made runs: flips, deltas, pages, errors."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from memeval.cli import app
from memeval.compare import compare_runs
from memeval.rundir.saved import SavedRun
from tests.memeval.report.conftest import edit_events, graded
from tests.memeval.report.html import parse, text_of
from tests.memeval.rundirs import RunDirBuilder, build_sample_run, memory, report_of

FIXED = {"answer": "70 rows, as you set.", "tool_calls": []}
BROKEN = {"answer": "Yes, ship it."}


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    """A: the sample run. B: s3q2 now answered from memory, s3q1 now wrong."""
    a = graded(build_sample_run(tmp_path / "a", run_id="before"))
    b = build_sample_run(tmp_path / "b", run_id="after")
    edit_events(b, "s3q2", **FIXED)
    edit_events(b, "s3q1", **BROKEN)
    return a, graded(b)


def test_flips_are_found_and_classified(tmp_path: Path) -> None:
    a, b = _pair(tmp_path)
    cmp = compare_runs(SavedRun.open(a), SavedRun.open(b))
    flips = [(f.turn, f.kind, str(f.a), str(f.b), f.direction) for f in cmp.flips]
    assert flips == [
        ("s3q1", "memory-dependent", "pass", "fail", "broke"),
        ("s3q2", "memory-corruptible", "fail", "pass", "fixed"),
    ]
    (deltas,) = cmp.scenarios
    changed = {d.name: d for d in deltas.changed}
    assert set(changed) == {"memory-dependent", "memory-corruptible"}
    assert (changed["memory-dependent"].a, changed["memory-dependent"].b) == ("1/1", "0/1")
    assert changed["memory-dependent"].better is False
    assert changed["memory-corruptible"].better is True


def test_identical_runs_have_no_flips_and_no_changed_metrics(tmp_path: Path) -> None:
    a = graded(build_sample_run(tmp_path / "a"))
    b = graded(build_sample_run(tmp_path / "b"))
    cmp = compare_runs(SavedRun.open(a), SavedRun.open(b))
    assert cmp.flips == []
    assert [s.changed for s in cmp.scenarios] == [[]]


def test_repeats_compare_as_pass_counts(tmp_path: Path) -> None:
    def run(root: Path, kept: list[bool]) -> Path:
        builder = RunDirBuilder(root)
        sc = builder.scenario("tiny", facts={"seventy": {"match": ["70 rows"]}})
        for repeat, keep in enumerate(kept):
            file = memory(Conventions=["- 70 rows"]) if keep else None
            sc.turn("t1", repeat=repeat, file=file, expect={"records": ["seventy"]})
        return graded(builder.write())

    a = run(tmp_path / "a", [True, False, True])
    b = run(tmp_path / "b", [True, True, True])
    (flip,) = compare_runs(SavedRun.open(a), SavedRun.open(b)).flips
    assert (flip.turn, flip.target, str(flip.a), str(flip.b)) == (
        "t1",
        "write",
        "2/3 pass",
        "3/3 pass",
    )
    assert flip.direction == "fixed"
    same = run(tmp_path / "c", [False, True, True])  # another repeat failed, same pass rate
    assert compare_runs(SavedRun.open(a), SavedRun.open(same)).flips == []


def test_cli_prints_flips_and_writes_the_compare_page(tmp_path: Path) -> None:
    a, b = _pair(tmp_path)
    report_of(a), report_of(b)
    result = CliRunner().invoke(app, ["compare", str(a), str(b)])
    assert result.exit_code == 0, result.output
    assert "1 fixed · 1 broke" in result.output
    lines = [line for line in result.output.splitlines() if "s3q" in line]
    assert any("s3q1" in line and "broke" in line for line in lines)
    assert any("s3q2" in line and "fixed" in line for line in lines)
    page = b / "compare.html"
    assert result.output.strip().endswith(str(page))
    elements = parse(page.read_text())
    rows = [text_of(e) for e in elements if e.tag == "tr" and "d-broke" in e.get("class")]
    assert len(rows) == 1 and "s3q1" in rows[0]
    hrefs = {e.get("href") for e in elements if e.tag == "a"}
    assert {"../a/report.html#u0-t6", "report.html#u0-t6"} <= hrefs


def test_cli_compare_out_option(tmp_path: Path) -> None:
    a, b = _pair(tmp_path)
    out = tmp_path / "elsewhere.html"
    result = CliRunner().invoke(app, ["compare", str(a), str(b), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.is_file() and not (b / "compare.html").exists()


def test_cli_compare_of_an_ungraded_run_is_one_line_exit_2(tmp_path: Path) -> None:
    a = graded(build_sample_run(tmp_path / "a"))
    b = build_sample_run(tmp_path / "b")
    result = CliRunner().invoke(app, ["compare", str(a), str(b)])
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1
    assert "not graded" in result.output and "memeval grade" in result.output


def test_cli_report_prints_the_path(sample_run: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["report", str(sample_run)])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == str(sample_run / "report.html")
    assert (sample_run / "report.html").is_file()
    out = tmp_path / "copy.html"
    result = CliRunner().invoke(app, ["report", str(sample_run), "--out", str(out)])
    assert result.exit_code == 0 and out.is_file()


def test_cli_report_on_a_non_run_directory_is_one_line_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"error: {tmp_path}: not a run directory (no run.json); pass reports/<run-id>"
    ]


def test_other_numbers_of_repeats_with_the_same_outcomes_are_no_flip(tmp_path: Path) -> None:
    def run(root: Path, kept: list[bool]) -> Path:
        builder = RunDirBuilder(root)
        sc = builder.scenario("tiny", facts={"seventy": {"match": ["70 rows"]}})
        for repeat, keep in enumerate(kept):
            file = memory(Conventions=["- 70 rows"]) if keep else None
            sc.turn("t1", repeat=repeat, file=file, expect={"records": ["seventy"]})
        return graded(builder.write())

    four = run(tmp_path / "four", [True, False, True, False])
    two = run(tmp_path / "two", [True, False])
    always = run(tmp_path / "always", [True] * 5)
    thrice = run(tmp_path / "thrice", [True] * 3)
    assert compare_runs(SavedRun.open(four), SavedRun.open(two)).flips == []
    assert compare_runs(SavedRun.open(always), SavedRun.open(thrice)).flips == []
    (flip,) = compare_runs(SavedRun.open(four), SavedRun.open(thrice)).flips
    assert flip.direction == "fixed" and flip.a.flaky and not flip.b.flaky
    shown = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["compare", str(four), str(thrice)])
    assert "fixed (flaky in A)" in shown.stdout
