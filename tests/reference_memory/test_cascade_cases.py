"""Benchmark cases (benchmarks/cases/updater.yaml) replayed with a scripted model that answers
every cascade question right: given right answers, the cascade's code must get each case right
by the benchmark's own rule (benchmarks/strategy_cases.py). What the real models answer is
measured by benchmarks/strategies.py, not here."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from reference_memory import FileMemory, SQLiteStore
from reference_memory.cascade import CascadeUpdater
from reference_memory.safety_checklist import ChecklistSafety

from .test_cascade import Label, Oracle

sys.path.insert(0, str(Path(__file__).parents[2]))
from benchmarks.strategy_cases import judge_update, load_updater_cases

CASES = {case.id: case for case in load_updater_cases()}

# Right answers per case: sentence prefix -> (kind, fact); relations for lines near a new fact.
# Sentences without a label are answered "not worth keeping".
RIGHT: dict[str, tuple[dict[str, Label], dict[str, str]]] = {
    "book-goal-genre": (
        {
            "For this agent": ("rule", "Hallucination is measured only on the summarize span."),
            "Our goal": ("goal", "Get prod hallucination under 10% before the Q3 launch."),
            "One thing stands out": ("finding", "attributes.book.genre is empty on agent-prod."),
        },
        {},
    ),
    "book-own-mistake": ({}, {}),
    "book-injection": ({}, {}),
    "book-80-rows": (
        {
            "From now on": ("rule", "Datasets should be exactly 80 rows."),
            "Rebuilt as": ("asset", "Dataset bs-prod-summarize-80 has 80 rows."),
            "With gpt-4.1 live": ("progress", "gpt-4.1 live: hallucination 0.075 (6 of 80)."),
        },
        {"- [user] Datasets should always have exactly 70": "update"},
    ),
    "legal-approver": (
        {
            "Priya moved": ("project", "Marco Rossi signs off the contract-qa launch."),
            "He wants": ("project", "Marco Rossi wants a one-page launch doc."),
        },
        {"- [user] Priya from the legal team": "update"},
    ),
    "traces-london": (
        {
            "I've relocated": ("correction", "Give times in London time."),
            "9.1%": ("progress", "Rejection rate 9.1%, down from the 11.9% baseline."),
        },
        {"- [user] Give times in Berlin": "update", "- Baseline": "different"},
    ),
    "dup-70-rows": (
        {"Just a reminder": ("rule", "Datasets always have exactly 70 rows.")},
        {"- [user] Datasets should always": "same"},
    ),
    "thanks": ({}, {}),
    "traces-goal-beside-others": (
        {
            "Our goal": ("goal", "Rejection rate under 8% by the end of Q3."),
            "11.9%": ("progress", "Baseline rejection rate 11.9% (311 of 2,604)."),
        },
        # were it asked, this model would take the book agent's goal for an older value
        {"- [user] Get prod hallucination": "update"},
    ),
    "pasted-injection": ({}, {}),
    "project-opens": ({"attributes.book.chapter is never": ("finding", "")}, {}),
    "project-guessed": ({"Premium accounts": ("finding", "")}, {}),
    "project-restated": (
        {"The summarize step": ("project", "")},
        {"- [user] agent-prod's summarize step": "update"},
    ),
}


@pytest.mark.parametrize("case_id", sorted(RIGHT))
async def test_right_answers_make_a_right_write(tmp_path: Path, case_id: str) -> None:
    case = CASES[case_id]
    labels, relations = RIGHT[case_id]
    store = SQLiteStore(tmp_path / "m.db")
    store.put("u", "s", case.text)
    model = Oracle(labels, relations)
    memory = FileMemory(model, store, updater=CascadeUpdater(), safety=ChecklistSafety())
    turn = case.as_turn()
    report = await memory.update("u", "s", turn)
    store.close()
    assert judge_update(case, report) == [], report.attempts[0].raw if report.attempts else ""
    # tool results (where planted text sits) never reach the model
    asked = json.dumps(model.requests)
    for message in turn.messages:
        if message["role"] == "tool":
            assert json.dumps(message["content"])[1:-1] not in asked


def test_the_held_in_set_is_large_enough_and_covers_each_kind() -> None:
    abouts = " ".join(case.about for case in CASES.values())
    assert len(CASES) >= 20
    for kind in ("user facts", "tool discover", "value change", "nothing to keep", "injection"):
        assert kind in abouts, kind
