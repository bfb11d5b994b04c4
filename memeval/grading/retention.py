"""Fact retention: each fact's state after every turn, and what removed it when it went.

The culprit search replays the turn's applied edit ops over the file the update started
from, one prefix at a time, with the pipeline's own `apply_ops`; the first op after which
the fact no longer holds is blamed. If the ops kept it, the compaction that ran on this
turn is blamed when its input still held the fact; anything else is "unknown", with why.

Retention is part of every turn's write verdict: a turn that loses a tracked fact that was
held and still expected fails its write, whatever its own expectation said (`retention_checks`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from memeval.grading.matching import check_fact
from memeval.rundir.record import TurnRecord
from memeval.rundir.results import CellState, CheckResult, Culprit, FactLoss, FactRetention
from memeval.rundir.update import UpdateRecord
from memeval.scenario.schema import Fact
from reference_memory.edits import apply_ops as pipeline_apply_ops

ApplyOps = Callable[[str, list[dict[str, Any]]], str]


def fact_retention(
    scenario: str,
    repeat: int,
    fact_id: str,
    fact: Fact,
    records: Sequence[TurnRecord],
    files: Sequence[str],
    apply_ops: ApplyOps | None = None,
) -> FactRetention:
    """States of one fact over one scenario repeat; `files[i]` is the snapshot after turn i.

    A fact is expected from the first turn whose `expect.records` names it and superseded
    from its `until` turn on (that snapshot is taken after the superseding turn).
    """
    turn_ids = [r.turn for r in records]
    expected_from = next(
        (i for i, r in enumerate(records) if r.expect is not None and fact_id in r.expect.records),
        None,
    )
    until = turn_ids.index(fact.until) if fact.until in turn_ids else None
    result = FactRetention(
        scenario=scenario,
        repeat=repeat,
        fact=fact_id,
        turns=turn_ids,
        expected_from=turn_ids[expected_from] if expected_from is not None else None,
        until=fact.until,
    )
    # a session may start from a given file (`initial_memory`): what it held counts as held
    held_before = bool(records) and check_fact(fact, records[0].update.file_before).holds
    for i, (record, file) in enumerate(zip(records, files, strict=True)):
        holds = check_fact(fact, file).holds
        state: CellState
        if until is not None and i >= until:
            state = "superseded"
        elif holds:
            state = "present"
        elif held_before:
            state = "lost"
            culprit = find_culprit(fact, record.update, apply_ops)
            result.losses.append(FactLoss(turn=record.turn, index=record.index, culprit=culprit))
        elif expected_from is not None and i >= expected_from:
            state = "missing"
        else:
            state = "absent"
        if holds and result.first_present is None:
            result.first_present = record.turn
        expected = expected_from is not None and i >= expected_from
        if expected and state in ("missing", "lost"):
            result.absent_while_expected.append(record.turn)
        result.cells.append(state)
        held_before = holds
    return result


def find_culprit(fact: Fact, update: UpdateRecord, apply_ops: ApplyOps | None = None) -> Culprit:
    """Which applied op (or the compaction) of this update removed the fact."""
    before = update.file_before
    start = check_fact(fact, before)
    if not start.holds:
        why = "the update did not start from a file holding the fact (no edit of this turn had it)"
        return Culprit(kind="unknown", excerpt=why)
    apply = apply_ops or pipeline_apply_ops
    ops = list(update.ops)
    held_line = start.line
    for i in range(len(ops)):
        try:
            text = apply(before, ops[: i + 1])
        # the op list comes from a saved run: any failure to replay it means "cannot tell"
        except Exception as exc:
            return Culprit(kind="unknown", excerpt=f"replaying op {i} failed: {exc}")
        now = check_fact(fact, text)
        if not now.holds:
            return Culprit(kind="op", op_index=i, op=ops[i], excerpt=held_line)
        held_line = now.line
    compacted_from = update.compaction.text_before if update.compaction else ""
    if compacted_from:
        kept = check_fact(fact, compacted_from)
        if kept.holds:
            return Culprit(kind="compaction", excerpt=kept.line)
    why = "the edit ops kept the fact and no compaction input held it"
    return Culprit(kind="unknown", excerpt=f"{why} (last seen: {held_line})")


def retention_checks(facts: Sequence[FactRetention], index: int) -> list[CheckResult]:
    """The retention part of turn `index`'s write verdict: one failed check per tracked fact
    that was held before this turn, was still expected, and is gone after it (the culprit op
    or compaction as evidence); else one passed check naming how many facts this turn had to
    keep. A turn before any fact is expected gets no retention check."""
    failed: list[CheckResult] = []
    expected = 0
    for retention in facts:
        turn = retention.turns[index]
        start = retention.turns.index(retention.expected_from) if retention.expected_from else None
        if start is None or index < start or retention.cells[index] == "superseded":
            continue
        expected += 1
        for loss in retention.losses:
            if loss.turn == turn and turn in retention.absent_while_expected:
                evidence = f"lost by {culprit_text(loss.culprit)}: {loss.culprit.excerpt}"
                failed.append(
                    CheckResult(name=f"retention:{retention.fact}", passed=False, evidence=evidence)
                )
    if failed or not expected:
        return failed
    noun = "fact" if expected == 1 else "facts"
    evidence = f"none of the {expected} tracked {noun} expected by now was lost on this turn"
    return [CheckResult(name="retention", passed=True, evidence=evidence)]


def culprit_text(culprit: Culprit) -> str:
    if culprit.kind == "op" and culprit.op is not None:
        kind = culprit.op.get("op") or culprit.op.get("type") or "edit"
        return f"edit op {culprit.op_index} ({kind})"
    if culprit.kind == "compaction":
        return "the compaction"
    return "an unknown cause"
