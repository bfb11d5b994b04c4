"""`memeval import` round trip through the CLI: import, validate, run on the fake model, report."""

from __future__ import annotations

from pathlib import Path

import pytest
from markupsafe import escape
from typer.testing import CliRunner

from memeval.cli.app import app
from memeval.rundir.record import read_run

DATA = Path(__file__).resolve().parents[2] / "data" / "importers"
runner = CliRunner()


@pytest.mark.parametrize(
    ("args", "name", "questions"),
    [
        (["locomo", str(DATA / "locomo-small.json"), "--sample", "mini-1", "--sessions", "2"],
         "locomo-mini-1", 4),
        (["letta", str(DATA / "letta-small.jsonl"), "--rows", "3"], "letta-letta-small", 3),
    ],
)  # fmt: skip
def test_import_validate_run_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], name: str, questions: int
) -> None:
    monkeypatch.setenv("MEMEVAL_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "imported.yaml"
    result = runner.invoke(app, ["import", *args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"scenario {name}" in result.output and f"({questions} questions)" in result.output
    assert f"run it: memeval run {out}" in result.output
    assert out.read_text().startswith("# ")  # the source header

    valid = runner.invoke(app, ["scenarios", "validate", str(out)])
    assert valid.exit_code == 0, valid.output

    run = runner.invoke(
        app, ["run", str(out), "--model", "fake", "--out", str(tmp_path / "runs"), "--no-progress"]
    )
    assert run.exit_code in (0, 1), run.output  # fake answers may fail questions
    (run_dir,) = list((tmp_path / "runs").iterdir())
    info = read_run(run_dir)
    description = info.scenarios[name].description
    assert description.startswith("Imported from ")
    assert "sha256" in description
    report = (run_dir / "report.html").read_text()
    assert str(escape(description)) in report  # shown, escaped like every scenario text
    if name.startswith("locomo"):  # results per category, with LoCoMo's F1
        assert 'id="by-tag"' in report and "<code>locomo-c1</code>" in report
        questions = (run_dir / "questions.csv").read_text()
        assert "answer_f1" in questions.splitlines()[0] and "locomo-c2" in questions


def test_a_failed_import_keeps_the_file_already_at_out(tmp_path: Path) -> None:
    out = tmp_path / "keep.yaml"
    out.write_text("mine\n")
    result = runner.invoke(
        app, ["import", "locomo", str(DATA / "locomo-small.json"), "--out", str(out)]
    )
    assert result.exit_code == 2
    assert "choose one with --sample (valid: mini-1, mini-2)" in result.output
    assert out.read_text() == "mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.yaml"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["letta", "nowhere.jsonl", "--out", "x.yaml"], "nowhere.jsonl: no such file"),
        (["letta", str(DATA / "letta-small.jsonl"), "--out", "no/such/dir/x.yaml"],
         "folder no/such/dir does not exist"),
    ],
)  # fmt: skip
def test_bad_paths_are_one_line_and_exit_2(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["import", *args])
    assert result.exit_code == 2
    assert message in result.output
