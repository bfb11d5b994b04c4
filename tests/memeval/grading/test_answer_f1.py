"""answer_f1: LoCoMo's token F1, recorded for every answer and a check only with `min`."""

from __future__ import annotations

import pytest

from memeval.grading.checks import question_checks, verdict_from_checks
from memeval.grading.f1 import token_f1, tokens
from memeval.scenario.schema import Question


def test_normalisation_drops_commas_articles_and_punctuation_and_stems() -> None:
    assert tokens("The Pottery, and a course!") == ["potteri", "cours"]
    assert tokens("running races") == tokens("Run race")


@pytest.mark.parametrize(
    ("answer", "gold", "f1"),
    [
        ("7 May 2023", "7 May 2023", 1.0),
        ("She went on 7 May 2023.", "7 May 2023", 2 / 3),  # 3 of 6 answer tokens, all of gold
        ("I don't know", "Aurelio", 0.0),
        ("", "Aurelio", 0.0),
        ("adoption agencies", "Adoption agency", 1.0),  # stems match
    ],
)
def test_token_f1(answer: str, gold: str, f1: float) -> None:
    assert token_f1(answer, gold) == pytest.approx(f1)


def question(**f1: object) -> Question:
    return Question.model_validate(
        {"type": "memory-dependent", "criterion": "c", "answer_f1": {"gold": "7 May 2023", **f1}}
    )


def test_without_min_the_score_is_not_a_check() -> None:
    assert question_checks(question(), "no idea", []) == []
    assert verdict_from_checks([]).verdict == "na"


def test_with_min_it_is_a_check_with_the_score_as_evidence() -> None:
    [check] = question_checks(question(min=0.5), "She went on 7 May 2023.", [])
    assert check.name == "answer_f1" and check.passed
    assert check.evidence == "F1 0.67 against '7 May 2023' (min 0.5)"
    [check] = question_checks(question(min=0.5), "Sometime in June.", [])
    assert not check.passed


def test_min_must_be_a_score() -> None:
    with pytest.raises(ValueError, match="less than or equal to 1"):
        question(min=2)
