"""Counts and per-fact facts about a resolved scenario, for `memeval scenarios list | show`."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from memeval.scenario.schema import ResolvedScenario

QUESTION_TYPES = ("memory-dependent", "memory-corruptible")


@dataclass
class Overview:
    name: str
    title: str
    sessions: int
    turns: int
    seed_turns: int
    eval_turns: int
    facts: int
    tools: int
    questions: Counter[str] = field(default_factory=Counter)  # question type -> count


def overview(resolved: ResolvedScenario) -> Overview:
    turns = [(s.kind, t) for s in resolved.sessions for t in s.turns]
    return Overview(
        name=resolved.name,
        title=resolved.title,
        sessions=len(resolved.sessions),
        turns=len(turns),
        seed_turns=sum(kind == "seed" for kind, _ in turns),
        eval_turns=sum(kind == "eval" for kind, _ in turns),
        facts=len(resolved.facts),
        tools=len(resolved.tools),
        questions=Counter(t.question.type for _, t in turns if t.question),
    )


def first_recorded(resolved: ResolvedScenario) -> dict[str, str]:
    """Fact id -> the first turn whose `expect.records` lists it."""
    first: dict[str, str] = {}
    for session in resolved.sessions:
        for turn in session.turns:
            for fid in turn.expect.records if turn.expect else []:
                first.setdefault(fid, turn.id)
    return first
