"""Human grades: strict grades.json, overrides with their source, agreement, `memeval grade`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memeval.cli import app
from memeval.grading.human import GradesError, load_grades
from memeval.rundir.results import load_results
from tests.memeval.grading.test_judge import PASS, one_question_run, scripted_judge
from tests.memeval.rundirs import grade_and_save


def grades_file(path: Path, *entries: dict, **top) -> Path:
    body = {"schema_version": 1, "grades": list(entries)} | top
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


def grade(turn: str = "s2q1", target: str = "question", verdict: str = "fail", **more) -> dict:
    return {
        "scenario": "book",
        "repeat": 0,
        "turn": turn,
        "target": target,
        "verdict": verdict,
        "note": "misses the target",
        "grader": "ana",
    } | more


async def test_a_human_grade_overrides_the_judge_and_keeps_its_source(tmp_path: Path) -> None:
    run_dir = one_question_run(tmp_path)
    await grade_and_save(run_dir, scripted_judge([PASS]))
    grades_file(run_dir / "grades.json", grade())
    results = await grade_and_save(run_dir, None)  # the stored judgement is reused, then overridden
    turn = results.turn("book", 0, "s2q1")
    assert turn and turn.judge and turn.human and turn.question
    assert turn.judge.verdict == "pass"
    assert turn.human.verdict == "fail" and turn.human.grader == "ana"
    assert (turn.question.verdict, turn.question.source) == ("fail", "human")
    assert turn.question.reason == "misses the target"
    assert (turn.final.verdict, turn.final.source) == ("fail", "human")
    metrics = results.metrics[0]
    assert str(metrics.memory_dependent) == "0/1"
    assert metrics.judge_human_agreement is not None
    assert str(metrics.judge_human_agreement) == "0/1"


async def test_a_human_can_pass_what_the_checks_failed(tmp_path: Path) -> None:
    run_dir = one_question_run(tmp_path, answer="Not yet: 64.8% is below ninety percent.")
    grades_file(run_dir / "grades.json", grade(verdict="pass", note="says it in words"))
    turn = (await grade_and_save(run_dir, None)).turn("book", 0, "s2q1")
    assert turn and turn.question and turn.question_check
    assert turn.question_check.verdict == "fail"
    assert (turn.question.verdict, turn.question.source) == ("pass", "human")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("{not json", "not valid JSON"),
        (json.dumps({"schema_version": 2, "grades": []}), "schema_version"),
        (
            json.dumps({"schema_version": 1, "grades": [grade(verdict="maybe")]}),
            "grades[0].verdict",
        ),
        (json.dumps({"schema_version": 1, "grades": [grade(colour="red")]}), "grades[0].colour"),
        (json.dumps({"schema_version": 1, "grades": [grade(), grade()]}), "a second time"),
    ],
)
def test_malformed_grades_files_are_one_line_errors(
    tmp_path: Path, body: str, message: str
) -> None:
    path = tmp_path / "grades.json"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(GradesError, match=message.replace("[", r"\[").replace("]", r"\]")) as err:
        load_grades(path)
    assert "\n" not in str(err.value)


def test_memeval_grade_imports_and_rewrites_verdicts_tables(tmp_path: Path) -> None:
    run_dir = one_question_run(tmp_path)
    exported = grades_file(tmp_path / "exported.json", grade(), grade("s1t1", "write", "pass"))
    result = CliRunner().invoke(app, ["grade", str(run_dir), str(exported)])
    assert result.exit_code == 0, result.output
    assert "imported 2 grades (2 in the run)" in result.output
    results = load_results(run_dir)
    question = results.turn("book", 0, "s2q1")
    write = results.turn("book", 0, "s1t1")
    assert question and question.question and question.question.source == "human"
    assert write and write.write and (write.write.verdict, write.write.source) == ("pass", "human")
    for table in ("turns", "questions", "facts", "llm_calls"):
        assert (run_dir / f"{table}.csv").is_file()
    stored = json.loads((run_dir / "grades.json").read_text())
    assert len(stored["grades"]) == 2 and all(g["graded_at"] for g in stored["grades"])

    again = grades_file(tmp_path / "again.json", grade(verdict="pass", note="on reflection"))
    result = CliRunner().invoke(app, ["grade", str(run_dir), str(again)])
    assert result.exit_code == 0, result.output
    assert "imported 1 grades (2 in the run)" in result.output  # same key: replaced, not added
    question = load_results(run_dir).turn("book", 0, "s2q1")
    assert question and question.human and question.human.note == "on reflection"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (grade(turn="s9q9"), "turn 's9q9' of scenario 'book' repeat 0 is not in this run"),
        (grade(repeat=3), "repeat 3 is not in this run"),
        (grade(turn="s1t1", target="question"), "turn 's1t1' has no a question"[:24]),
        (grade(verdict="meh"), "grades[0].verdict"),
    ],
)
def test_memeval_grade_rejects_a_bad_file_with_one_line_and_exit_2(
    tmp_path: Path, entry: dict, message: str
) -> None:
    run_dir = one_question_run(tmp_path)
    bad = grades_file(tmp_path / "bad.json", entry)
    result = CliRunner().invoke(app, ["grade", str(run_dir), str(bad)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]
    assert str(bad) in lines[0]
    assert not (run_dir / "grades.json").exists()  # nothing written


def test_memeval_grade_on_a_directory_that_is_not_a_run(tmp_path: Path) -> None:
    bad = grades_file(tmp_path / "g.json", grade())
    result = CliRunner().invoke(app, ["grade", str(tmp_path / "nope"), str(bad)])
    assert result.exit_code == 2 and "not a run directory" in result.stderr
