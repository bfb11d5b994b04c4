"""`memeval scenarios calibrate` and the calibration library: every control's checks verdict
against its known verdict (exit 0 / 1 / 2), and the judge's accuracy on the controls."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memeval.cli.app import app
from memeval.grading.calibrate import load_controls, run_calibration
from memeval.models.base import ChatResponse, ModelError
from memeval.models.scripted import FunctionModel

HERE = Path(__file__).parent
WRONG = HERE / "wrong-control.yaml"
MINI = HERE.parent / "runner" / "mini.yaml"  # a scenario without controls
runner = CliRunner()
WIDE = {"COLUMNS": "200"}


def test_bundled_suite_gets_every_known_verdict_from_the_checks() -> None:
    result = runner.invoke(app, ["scenarios", "calibrate", "combined", "--no-judge"], env=WIDE)
    assert result.exit_code == 0, result.output
    counted = re.search(r"checks: (\d+)/(\d+) controls got their known verdict", result.output)
    assert counted is not None and counted.group(1) == counted.group(2), result.output
    assert int(counted.group(2)) >= 3 * 30  # 30 questions, at least three controls each
    assert "defect" not in result.output


def test_a_control_the_checks_contradict_exits_1_and_names_the_question() -> None:
    result = runner.invoke(app, ["scenarios", "calibrate", str(WRONG), "--no-judge"], env=WIDE)
    assert result.exit_code == 1, result.output
    assert "checks: 5/6 controls" in result.output
    (defect,) = [line for line in result.output.splitlines() if line.startswith("defect:")]
    assert "wrong-control/s2q1 fail[1]" in defect
    assert "the checks say pass (known fail)" in defect


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["no-such-scenario"], "no-such-scenario"),
        ([str(MINI)], "no control answers"),
        ([], "name at least one scenario"),
        (["combined", "--judge-strategy", "nope"], "judge strategy 'nope' is unknown"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["scenarios", "calibrate", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def answer_in(messages: list[dict[str, Any]]) -> str:
    prompt = str(messages[-1]["content"])
    found = re.search(r"The agent's answer:\s*<data>\s*(.*?)\s*</data>", prompt, re.DOTALL)
    assert found is not None, prompt
    return found.group(1)


def test_judge_accuracy_precision_and_not_attempted_on_known_controls() -> None:
    """A judge that passes any answer with "70 rows", calls "I don't know" not attempted and
    fails the rest: right on 5 of the 6 controls (it passes the deliberately wrong one)."""

    def judge(messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
        answer = answer_in(messages)
        if "70 rows" in answer:
            return '{"verdict": "pass", "reason": "70 rows"}'
        if "don't know" in answer:
            return '{"verdict": "not-attempted", "reason": "declines"}'
        return '{"verdict": "fail", "reason": "no 70 rows"}'

    controls = load_controls([str(WRONG)])
    model = FunctionModel(judge, name="function:judge")
    outcome = asyncio.run(run_calibration(controls, model, strategy="single"))
    summary = outcome.judge
    assert summary is not None
    assert (summary.controls, summary.correct, summary.could_not_grade) == (6, 5, 0)
    assert (summary.said_fail, summary.said_fail_right, summary.not_attempted) == (3, 3, 1)
    assert summary.accuracy == pytest.approx(5 / 6)
    assert summary.precision_on_fail == 1.0
    assert summary.low_trust  # 83% < 90%
    assert summary.questions == 2 and summary.strategy == "single"
    (wrong,) = summary.misjudged
    assert (wrong.turn, wrong.known, wrong.index, wrong.judge) == ("s2q1", "fail", 1, "pass")
    assert [r.control.label for r in outcome.defects] == ["fail[1]"]


def test_a_judge_that_cannot_answer_is_counted_not_guessed() -> None:
    def broken(messages: list[dict[str, Any]], tools: Any, schema: Any) -> ChatResponse:
        raise ModelError("endpoint down")

    controls = load_controls([str(WRONG)])
    outcome = asyncio.run(
        run_calibration(controls, FunctionModel(broken, name="function:down"), strategy="single")
    )
    summary = outcome.judge
    assert summary is not None
    assert (summary.controls, summary.could_not_grade, summary.correct) == (6, 6, 0)
    assert summary.accuracy is None and summary.low_trust
    assert all(r.judge is not None and r.judge.verdict == "error" for r in outcome.results)


def test_controls_tool_calls_get_fixture_results_and_count_for_must_call() -> None:
    controls = load_controls([str(WRONG)])
    passing = next(c for c in controls if c.turn.id == "s2q1" and c.known == "pass")
    record = passing.record()
    (call,) = record.tool_calls
    assert (call.name, call.result) == ("create_dataset", {"status": "created"})
    asking = next(c for c in controls if c.turn.id == "s2q1" and c.label == "fail[0]")
    from memeval.grading.calibrate import check_control

    assert check_control(passing).verdict == "pass"
    assert "must_call:create_dataset" in check_control(asking).reason


def test_run_refuses_an_unknown_judge_strategy_before_running(tmp_path: Path) -> None:
    args = ["run", "book-summary", "--model", "fake", "--judge-strategy", "nope"]
    result = runner.invoke(app, [*args, "--out", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "judge strategy 'nope' is unknown" in result.output
    assert not list(tmp_path.iterdir())


def test_controls_no_check_decides_are_left_to_the_judge_not_called_defects(
    tmp_path: Path,
) -> None:
    """An imported LoCoMo file: with --f1-min the F1 check decides the answerable questions'
    controls; the adversarial ones (the dataset's trap answer) only the judge can grade."""
    from memeval.importers.common import write_scenario
    from memeval.importers.locomo import import_locomo

    data = HERE.parents[1] / "data" / "importers" / "locomo-small.json"
    doc, source = import_locomo(data, sample="mini-1", f1_min=0.5)
    out = tmp_path / "locomo.yaml"
    write_scenario(doc, source, out, "memeval import locomo ...")
    result = runner.invoke(app, ["scenarios", "calibrate", str(out), "--no-judge"], env=WIDE)
    assert result.exit_code == 0, result.output
    assert (
        "checks: 15/15 controls got their known verdict; 4 no check decides (left to the judge)"
    ) in result.output
    assert "defect" not in result.output
