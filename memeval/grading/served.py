"""Whether a question's facts reached the agent: stored, served, or neither.

A memory system can hold the fact a question needs and still not put it in front of the
agent (retrieval ranked it out of its top-k; a core file cut it to an archive nobody
searched). For every question with tracked facts this module reads, from the saved run:
- stored: every fact the question needs is in the memory as it stood before the turn (the
  previous turn's snapshot; the session's starting file on a unit's first turn);
- served: every such fact is in what was injected for the turn, or in a result of a tool the
  memory system offered (a `search_memory` hit counts as served).
Facts are found by their patterns anywhere in the text: a `[user]` tag or a `## ` section is
a file concept, so placement is not asked here (write checks ask it where it means something).
"""

from __future__ import annotations

import json

from memeval.grading.matching import find_any
from memeval.rundir.reach import QuestionReach, Reach
from memeval.rundir.record import TurnRecord
from memeval.rundir.results import RunResults
from memeval.rundir.saved import SavedRun
from memeval.scenario.schema import Fact


def question_reach(run: SavedRun, results: RunResults) -> list[QuestionReach]:
    """One row per question turn of the run, in unit order."""
    verdicts = {(t.scenario, t.repeat, t.turn): t for t in results.turns}
    rows: list[QuestionReach] = []
    for records in run.planned_units():
        before = records[0].update.file_before
        for record in records:
            after = run.shown_snapshot(record)
            question = record.question
            if question is not None:
                tv = verdicts.get((record.scenario, record.repeat, record.turn))
                verdict = tv.final.verdict if tv is not None else "na"
                scenario = run.scenario(record.scenario)
                facts = [(f, scenario.facts[f]) for f in question.facts if f in scenario.facts]
                own = {tool.name for tool in scenario.tools}
                rows.append(_reach(record, verdict, facts, before, own))
            before = after
    return rows


def _reach(
    record: TurnRecord,
    verdict: str,
    facts: list[tuple[str, Fact]],
    stored_text: str,
    scenario_tools: set[str],
) -> QuestionReach:
    question = record.question
    assert question is not None

    def row(reach: Reach, missing: tuple[str, ...] = ()) -> QuestionReach:
        return QuestionReach(
            scenario=record.scenario,
            repeat=record.repeat,
            turn=record.turn,
            question_type=question.type,
            verdict=verdict,
            facts=tuple(fid for fid, _ in facts),
            reach=reach,
            missing=missing,
        )

    if not facts:
        return row("no tracked fact")
    tool_results = [
        json.dumps(call.result, ensure_ascii=False)
        for call in record.tool_calls
        if call.name not in scenario_tools  # the memory system's own tools (search_memory)
    ]
    served_text = "\n".join([record.memory_context or "", *tool_results])
    not_stored = tuple(fid for fid, fact in facts if find_any(fact.match, stored_text) is None)
    if not_stored:
        return row("not stored", not_stored)
    not_served = tuple(fid for fid, fact in facts if find_any(fact.match, served_text) is None)
    if not_served:
        return row("stored, not served", not_served)
    return row("served")
