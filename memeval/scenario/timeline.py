"""Checks that need the replay order: a fact's `until` against the turns that record it.

Run on the resolved scenario, so a combined file's own facts may end at an included turn and
its own turns may record included facts. Problems are reported where the file can be fixed:
in the file's own facts and turns (included files were checked on their own, and `order`
keeps their sessions in their order).
"""

from __future__ import annotations

from collections.abc import Iterator

from memeval.scenario.problems import Problem, listing
from memeval.scenario.schema import ResolvedScenario
from memeval.scenario.yamlsource import YPath


def check_timeline(
    resolved: ResolvedScenario, own_facts: set[str], own_turns: dict[str, YPath]
) -> Iterator[Problem]:
    """`until` names a known turn, not before the fact is first recorded; nothing records a
    fact after its `until`. `own_turns` maps the file's own turn ids to their paths."""
    turns = [t for s in resolved.sessions for t in s.turns]
    position = {t.id: i for i, t in enumerate(turns)}
    first: dict[str, int] = {}
    for i, turn in enumerate(turns):
        for fid in turn.expect.records if turn.expect else []:
            first.setdefault(fid, i)
    for fid, fact in resolved.facts.items():
        if fact.until is None:
            continue
        path: YPath = ("facts", fid, "until")
        own = fid in own_facts
        end = position.get(fact.until)
        if end is None:
            if own:
                valid = listing(position)
                yield Problem(path, f"unknown turn {fact.until!r} (valid: {valid})")
            continue
        if fid not in first:
            if own:
                yield Problem(
                    path, f"fact {fid!r} is never in any expect.records, so it has no end"
                )
            continue
        if end < first[fid]:
            if own:
                start = turns[first[fid]].id
                yield Problem(
                    path, f"turn {fact.until!r} comes before the fact is first recorded ({start!r})"
                )
            continue
        for turn in turns[end + 1 :]:
            records = turn.expect.records if turn.expect else []
            if fid in records and turn.id in own_turns:
                yield Problem(
                    (*own_turns[turn.id], "expect", "records", records.index(fid)),
                    f"fact {fid!r} may be gone after turn {fact.until!r} (its until)",
                )
