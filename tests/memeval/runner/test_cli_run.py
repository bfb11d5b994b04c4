"""`memeval run` end to end through the CLI, and its one-line errors."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memeval.cli.app import app
from memeval.rundir.record import read_events, read_run

runner = CliRunner()

RUN_FILES = [
    "run.json",
    "events.jsonl",
    "verdicts.json",
    "turns.csv",
    "questions.csv",
    "facts.csv",
    "llm_calls.csv",
    "report.html",
]


def test_run_combined_with_fake_writes_every_file(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["run", "combined", "--model", "fake", "--out", str(tmp_path), "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    (run_dir,) = list(tmp_path.iterdir())
    for name in RUN_FILES:
        assert (run_dir / name).is_file(), name
    info = read_run(run_dir)
    events = read_events(run_dir)
    assert info.status == "complete"
    assert len(events) == sum(len(s.turns) for s in info.scenarios["combined"].sessions)
    snapshots = sorted((run_dir / "snapshots" / "combined" / "r0").iterdir())
    assert len(snapshots) == len(events)
    with open(run_dir / "questions.csv") as fh:
        assert len(list(csv.DictReader(fh))) == sum(1 for e in events if e.question)
    assert "not a model" in result.output
    assert str(run_dir / "report.html") in result.output
    assert all(spec == "fake" for spec in info.models.values())
    assert info.prompt_hashes and info.scenario_hashes and info.versions["memeval"]


def test_junit_and_baseline_from_the_run_command(tmp_path: Path) -> None:
    base = runner.invoke(
        app,
        ["run", "legal-rag", "--model", "fake", "--out", str(tmp_path / "a"), "--no-progress"],
    )
    assert base.exit_code == 0, base.output
    (baseline,) = list((tmp_path / "a").iterdir())
    junit = tmp_path / "junit.xml"
    again = runner.invoke(
        app,
        [
            "run", "legal-rag", "--model", "fake", "--out", str(tmp_path / "b"), "--no-progress",
            "--junit", str(junit), "--baseline", str(baseline),
        ],
    )  # fmt: skip
    assert again.exit_code == 0, again.output  # same deterministic stand-in: no regression
    assert junit.read_text().startswith("<?xml") and "<testcase" in junit.read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["no-such-scenario"], "no-such-scenario"),
        (["legal-rag", "--memory", "vector-db"], "unknown memory system 'vector-db'"),
        (["legal-rag", "--model", "gpt4"], "gpt4"),
        (["legal-rag", "--model", "openai:gpt-4o-mini"], "OPENAI_API_KEY"),
        (["legal-rag", "--memory", "nosuchpkg.mod:make"], "cannot import nosuchpkg.mod"),
        (["legal-rag", "--updater", "bogus"], "--updater 'bogus' is unknown"),
        (["--resume", "/nonexistent/run"], "not a run directory"),
        ([], "name at least one scenario"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    model = [] if "--model" in args else ["--model", "fake"]  # some cases set their own
    result = runner.invoke(app, ["run", *args, *model, "--out", str(tmp_path)])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]
    assert "Traceback" not in result.output
    assert not any(tmp_path.iterdir())  # nothing half-made left behind


def test_run_json_is_valid_json_with_a_schema_version(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["run", "legal-rag", "--memory", "none", "--model", "fake", "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    (run_dir,) = list(tmp_path.iterdir())
    data = json.loads((run_dir / "run.json").read_text())
    assert data["schema_version"] == 1 and data["memory"] == "none"
    assert "updater" not in data["models"]  # no pipeline roles without the file memory
