"""A graded run states the judge's accuracy on the controls of the questions it graded, marks
its verdicts low-trust under 90%, and keeps not-attempted answers distinct (and failed)."""

from __future__ import annotations

import asyncio
import csv
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import memeval
from memeval.cli.app import app
from memeval.models.scripted import FunctionModel
from memeval.publishing import publish
from memeval.rundir.results import load_results

runner = CliRunner()


@pytest.fixture(scope="module")
def control_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs")
    args = ["run", "legal-rag", "--memory", "none", "--agent", "control:pass", "--model", "fake"]
    result = runner.invoke(app, [*args, "--no-judge", "--out", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    (run_dir,) = list(out.iterdir())
    return run_dir


def regrade(run_dir: Path, verdict: str) -> memeval.SavedRun:
    def judge(messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
        return f'{{"verdict": "{verdict}", "reason": "scripted"}}'

    run = memeval.SavedRun.open(run_dir)
    model = FunctionModel(judge, name=f"function:{verdict}")
    results = asyncio.run(memeval.grade_run(run, model, rejudge=True, strategy="single"))
    publish(run, results)
    return memeval.SavedRun.open(run_dir)


def test_a_judge_that_fails_everything_is_low_trust_in_results_and_report(
    control_run: Path,
) -> None:
    saved = regrade(control_run, "fail")
    results = saved.graded()
    jc = results.judge_calibration
    assert jc is not None and jc.model == "function:fail" and jc.strategy == "single"
    # the judge graded every question (all pass controls pass the checks): 8 questions
    assert jc.questions == 8
    scenario = saved.scenario("legal-rag")
    passes = sum(
        len(t.question.controls.pass_)
        for s in scenario.sessions
        for t in s.turns
        if t.question and t.question.controls
    )
    assert jc.controls - jc.correct == passes  # wrong on exactly the pass controls
    assert jc.low_trust
    html = (control_run / "report.html").read_text("utf-8")
    assert "accuracy on controls" in html and "low-trust" in html
    assert 'class="lowtrust"' in html  # judge lines of the cards are marked too


def test_a_judge_that_passes_everything_is_trusted_only_if_it_earns_it(
    control_run: Path,
) -> None:
    jc = regrade(control_run, "pass").graded().judge_calibration
    assert jc is not None
    assert jc.correct == jc.controls - sum(1 for m in jc.misjudged if m.known == "fail")
    assert all(m.known == "fail" for m in jc.misjudged)
    assert jc.low_trust  # most controls are fail controls: passing them all is wrong


def test_not_attempted_is_a_fail_kept_distinct(control_run: Path) -> None:
    saved = regrade(control_run, "not-attempted")
    results = load_results(control_run)
    asked = [t for t in results.turns if t.question is not None]
    assert asked and all(t.question.verdict == "fail" for t in asked)
    assert all(t.question.not_attempted and t.judge.verdict == "not-attempted" for t in asked)
    metrics = results.metrics_for("legal-rag")
    assert metrics is not None and metrics.questions_not_attempted == len(asked)
    assert metrics.questions_ungraded == 0  # never a silent "na"
    with open(control_run / "questions.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["not_attempted"] for r in rows} == {"True"}
    html = (saved.path / "report.html").read_text("utf-8")
    assert "not attempted" in html
    assert memeval.SavedRun.open(control_run).graded().judge_calibration is not None


def test_regrading_without_a_judge_keeps_the_measured_accuracy(control_run: Path) -> None:
    regrade(control_run, "fail")
    run = memeval.SavedRun.open(control_run)
    results = asyncio.run(memeval.grade_run(run))
    assert results.judge_calibration is not None
    assert results.judge_calibration.model == "function:fail"
