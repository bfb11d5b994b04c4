"""The `select` compactor: the model classifies subsections and lines, code removes them."""

from __future__ import annotations

import json

from reference_memory import Caller, ClassifierSafety, UpdateReport
from reference_memory.compaction_select import SelectCompactor
from reference_memory.testing import ALLOW, Request, roles

FILE = """## User Profile
- [user] Dana leads demand forecasting at Acme Grocery.
- Reports to the VP of Supply Chain.

## Goals
### Produce accuracy
- [user] Goal: produce WAPE below 10% by the end of Q3.
- Baseline at the start of the quarter: produce WAPE 14.1%.
### Done: notebook migration (completed in March)
- Moved every notebook into the forecasting repo; finished 14 March.
- Old notebooks are archived read-only.

## Projects
### Weekly forecast
- [user] The forecast runs weekly at store-item level.
- Current model: Prophet per store-category, retrained weekly.
- Pilot dashboard paused in Q1 when its owner left.

## Assets
- sales_daily: daily sales per store and item since 2019.
- sales_daily: daily sales per store and item since 2019.

## Conventions
- [user] Report forecast error as WAPE, never MAPE.

## Interaction corrections
"""


def kind(value: str) -> str:
    return json.dumps({"kind": value})


def asked(request: Request) -> str:
    """The question of a request (after the file, on the first one)."""
    return request.last.split("</memory>")[-1]


def answer_by_content(request: Request) -> str:
    question = asked(request)
    if "Done: notebook migration" in question or "paused in Q1" in question:
        return kind("done" if "Done:" in question else "stale")
    return kind("lasting")


async def compact(compactor: SelectCompactor, *answers: object) -> tuple[object, list[Request]]:
    models = roles(compactor=answers, safety=[ALLOW])  # type: ignore[arg-type]
    caller = Caller(models, UpdateReport())
    outcome = await compactor.compact(FILE, caller, ClassifierSafety())
    return outcome, models["compactor"].requests


async def test_removes_what_the_model_calls_done_or_stale_and_never_offers_user_lines() -> None:
    compactor = SelectCompactor(trigger=len(FILE) - 200, target=len(FILE) - 250)
    outcome, requests = await compact(compactor, *[answer_by_content] * 12)

    text = outcome.text  # type: ignore[attr-defined]
    assert text is not None and outcome.report.accepted  # type: ignore[attr-defined]
    assert "notebook" not in text and "### Done" not in text  # the whole subsection went
    assert "paused in Q1" not in text
    assert text.count("sales_daily") == 1  # the repeat went without a question
    for line in FILE.splitlines():
        if "[user]" in line or (line.startswith("#") and "Done" not in line):
            assert line in text
    questions = [asked(r) for r in requests]
    assert not any("[user]" in q for q in questions)
    assert not any("Reports to the VP" in q for q in questions)  # User Profile never offered
    assert "subsection" in questions[0] and "Done: notebook migration" in questions[0]
    # one growing chat: the static instruction, then the file once, with the first question
    assert requests[1].messages[:2] == requests[0].messages
    assert sum("<memory>" in str(m["content"]) for m in requests[-1].messages) == 1
    assert outcome.report.reached_target  # type: ignore[attr-defined]


async def test_it_stops_asking_once_the_file_is_under_the_target() -> None:
    compactor = SelectCompactor(trigger=len(FILE) - 50, target=len(FILE) - 120)
    outcome, requests = await compact(compactor, kind("done"))

    assert len(requests) == 1  # the first subsection sufficed
    assert outcome.text is not None and "notebook" not in outcome.text  # type: ignore[attr-defined]


async def test_everything_lasting_leaves_the_file_over_and_says_so() -> None:
    compactor = SelectCompactor(trigger=len(FILE) - 200, target=len(FILE) - 300)
    outcome, requests = await compact(compactor, *[kind("lasting")] * 12)

    report = outcome.report  # type: ignore[attr-defined]
    # the one subsection without a [user] line, then three plain lines outside Goals (the
    # repeated bullet is gone already) and three in Goals
    assert len(requests) == 7
    assert report.accepted and not report.reached_target  # only the repeat went
    assert any("nothing else was called removable" in e for e in report.errors)


async def test_under_the_trigger_a_run_of_lasting_answers_ends_the_search_for_the_target() -> None:
    # the Done subsection (≈130 chars) gets the file under the trigger, not under the target
    compactor = SelectCompactor(trigger=len(FILE) - 150, target=len(FILE) - 400, patience=2)
    outcome, requests = await compact(compactor, kind("done"), *[kind("lasting")] * 6)

    report = outcome.report  # type: ignore[attr-defined]
    assert len(requests) == 3  # the subsection, then two lines called lasting
    assert report.accepted and not report.reached_target
    assert report.errors == [
        f"attempt 1: still {len(outcome.text)} characters, over the {len(FILE) - 400} target "  # type: ignore[attr-defined]
        "(stopped under the trigger after 2 parts in a row were lasting)"
    ]
    assert outcome.text is not None and "notebook" not in outcome.text  # type: ignore[attr-defined]

    # over the trigger, lasting answers never stop it early: every part is asked about
    over = SelectCompactor(trigger=len(FILE) - 200, target=len(FILE) - 300, patience=2)
    _, all_asked = await compact(over, *[kind("lasting")] * 12)
    assert len(all_asked) == 7


async def test_an_unreadable_answer_stops_with_what_was_removed_so_far() -> None:
    compactor = SelectCompactor(trigger=len(FILE) - 200, target=len(FILE) - 300)
    outcome, requests = await compact(compactor, kind("done"), "Sure! That line is done.")

    report = outcome.report  # type: ignore[attr-defined]
    assert len(requests) == 2
    assert any(e.startswith("question 2:") for e in report.errors)
    assert outcome.text is not None and "notebook" not in outcome.text  # type: ignore[attr-defined]
    assert "paused in Q1" in outcome.text  # type: ignore[attr-defined]


async def test_a_question_budget_bounds_the_calls() -> None:
    compactor = SelectCompactor(trigger=len(FILE) - 200, target=len(FILE) - 300, questions=3)
    outcome, requests = await compact(compactor, *[kind("lasting")] * 3)

    assert len(requests) == 3
    assert "stopped after 3 questions" in outcome.report.errors  # type: ignore[attr-defined]
