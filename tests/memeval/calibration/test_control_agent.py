"""The control agent: `memeval run` end to end on answers whose verdict is known."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from memeval.cli.app import app
from memeval.rundir.record import read_run
from memeval.rundir.saved import SavedRun

runner = CliRunner()


def run(tmp_path: Path, agent: str, *extra: str) -> SavedRun:
    args = ["run", "combined", "--memory", "none", "--agent", agent, "--model", "fake"]
    result = runner.invoke(app, [*args, "--no-judge", "--out", str(tmp_path), "--no-progress"])
    assert result.exit_code == 0, result.output
    (run_dir,) = list(tmp_path.iterdir())
    return SavedRun.open(run_dir)


def questions(saved: SavedRun) -> dict[str, str]:
    results = saved.graded()
    return {t.turn: t.question.verdict for t in results.turns if t.question is not None}


def test_pass_controls_pass_every_question_without_memory(tmp_path: Path) -> None:
    """Controls ignore memory: with --memory none every question still passes, so every
    pass is the grading path's doing, not the agent's."""
    saved = run(tmp_path, "control:pass")
    verdicts = questions(saved)
    assert len(verdicts) == 30
    assert set(verdicts.values()) == {"pass"}, verdicts
    info = read_run(saved.path)
    assert "agent" not in info.models  # the control agent calls no model
    assert info.config.agent == "control:pass"
    assert all(r.memory_context is None for r in saved.events)


def test_fail_controls_fail_every_question(tmp_path: Path) -> None:
    saved = run(tmp_path, "control:fail")
    verdicts = questions(saved)
    assert len(verdicts) == 30
    assert set(verdicts.values()) == {"fail"}, verdicts
    metrics = saved.graded().metrics_for("combined")
    assert metrics is not None
    assert metrics.memory_dependent.passed == 0 and metrics.memory_dependent.total == 20
    assert metrics.memory_corruptible.passed == 0 and metrics.memory_corruptible.total == 10


def test_control_tool_calls_are_made_against_the_fixtures(tmp_path: Path) -> None:
    saved = run(tmp_path, "control:pass")
    record = next(r for r in saved.events if r.turn == "book-summary/s3q1")
    (call,) = record.tool_calls
    assert call.name == "create_dataset" and call.arguments["rows"] == 70
    assert call.result["status"] == "created"
    assert [m["role"] for m in record.messages] == ["user", "assistant", "tool", "assistant"]


@pytest.mark.parametrize("agent", ["control:maybe", "control:"])
def test_unknown_control_kind_is_bad_input(tmp_path: Path, agent: str) -> None:
    args = ["run", "book-summary", "--agent", agent, "--model", "fake", "--out", str(tmp_path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "control:pass or control:fail" in result.output
    assert not list(tmp_path.iterdir())  # nothing written for bad input


def test_a_question_without_controls_is_an_agent_error_not_a_pass(tmp_path: Path) -> None:
    mini = Path(__file__).parents[1] / "runner" / "mini.yaml"
    args = ["run", str(mini), "--memory", "none", "--agent", "control:pass", "--model", "fake"]
    result = runner.invoke(app, [*args, "--no-judge", "--out", str(tmp_path), "--no-progress"])
    assert result.exit_code == 0, result.output
    (run_dir,) = list(tmp_path.iterdir())
    saved = SavedRun.open(run_dir)
    asked = [r for r in saved.events if r.question is not None]
    assert asked and all("has no pass controls" in (r.agent_error or "") for r in asked)
    assert {t.question.verdict for t in saved.graded().turns if t.question} == {"error"}
