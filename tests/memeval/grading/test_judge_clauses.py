"""The clauses judge: how a criterion is split, and how the yes/no answers become a verdict."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from memeval.grading.judge_clauses import ClausesJudge, clauses
from memeval.grading.judge_strategies import strategy_for
from memeval.models.base import ChatResponse, ModelError
from memeval.models.scripted import ScriptedModel
from memeval.rundir.record import TurnRecord
from memeval.scenario.schema import Question


def test_clauses_split_at_semicolons_and_sentences_but_not_inside_parentheses() -> None:
    parts = clauses(
        "Runs the eval on critique spans (a one-off; it may mention the rule) and reports it;"
        " does not refuse. May add a note. An answer that reports 0.80 fails."
    )
    first = "Runs the eval on critique spans (a one-off; it may mention the rule) and reports it"
    assert [(c.text, c.negated) for c in parts] == [
        (first, False),
        ("does not refuse", False),
        ("reports 0.80", True),
    ]
    assert [c.text for c in clauses("PR #4812.")] == ["PR #4812"]
    (only,) = clauses("0.648 against the 0.90 bar.")
    assert only.text == "0.648 against the 0.90 bar"


def record(answer: str) -> TurnRecord:
    question = Question(
        type="memory-dependent",
        criterion="Says 0.648; cites the 0.90 bar. An answer that reports 0.80 fails.",
        answer_matches=[["0.648"]],
    )
    return TurnRecord(
        scenario="s",
        index=0,
        session="e",
        session_index=0,
        session_kind="eval",
        source="s",
        turn="q1",
        user_message="What is v2's score?",
        answer=answer,
        memory_context="- v2 scored 0.648 against the 0.90 bar",
        question=question,
    )


def judge(steps: list[Any], answer: str = "0.648, against 0.90.") -> tuple[str, str, ScriptedModel]:
    model = ScriptedModel(steps, name="scripted:judge")
    rec = record(answer)
    assert rec.question is not None
    result = asyncio.run(ClausesJudge().judge(model, rec, rec.question.criterion, None))
    return result.verdict, result.reason or result.error or "", model


def a(value: str) -> str:
    return json.dumps({"answer": value})


def test_every_part_met_and_the_fail_condition_absent_is_a_pass() -> None:
    verdict, _, model = judge([a("yes"), a("yes"), a("no")])
    assert verdict == "pass" and model.remaining == 0
    material = model.requests[0].messages[1]["content"]
    assert "answer_matches[0]: matched '0.648'" in material  # the checks' findings are shown
    assert material.index("v2 scored 0.648") < material.index("The agent's answer")  # memory first
    assert model.requests[0].messages[0]["role"] == "system"  # static text first


def test_a_judgement_is_cached_only_when_every_question_of_it_was() -> None:
    def served(value: str, cached: bool) -> ChatResponse:
        return ChatResponse(content=a(value), cached=cached)

    for flags, expected in [((True, True, True), True), ((True, False, True), False)]:
        answers = zip(["yes", "yes", "no"], flags, strict=True)
        model = ScriptedModel([served(value, cached) for value, cached in answers])
        rec = record("0.648, against 0.90.")
        assert rec.question is not None
        result = asyncio.run(ClausesJudge().judge(model, rec, rec.question.criterion, None))
        assert result.verdict == "pass" and result.cached is expected


def test_a_part_not_met_fails_and_says_which() -> None:
    verdict, reason, model = judge([a("yes"), a("no"), a("attempts")])
    assert verdict == "fail" and "cites the 0.90 bar" in reason
    assert model.remaining == 0  # stops at the first unmet part, then asks the attempt question
    assert "attempt the task" in model.requests[-1].last_user


def test_the_negated_condition_met_fails() -> None:
    verdict, reason, _ = judge([a("yes"), a("yes"), a("yes"), a("attempts")])
    assert verdict == "fail" and "reports 0.80" in reason


def test_a_declined_answer_is_not_attempted() -> None:
    verdict, _, model = judge([a("no"), a("declines or asks back")], answer="I don't know.")
    assert verdict == "not-attempted" and model.remaining == 0


@pytest.mark.parametrize("bad", ['{"answer": "maybe"}', "not json", ModelError("down")])
def test_an_unusable_answer_is_an_error_never_a_guess(bad: Any) -> None:
    verdict, error, _ = judge([a("yes"), bad])
    assert verdict == "error" and error


def test_strategies_by_name_and_default() -> None:
    assert strategy_for("clauses").name == "clauses"
    assert strategy_for(None, "openai:gpt-4.1").name == "single"
    with pytest.raises(Exception, match="unknown"):
        strategy_for("nope")
