"""One turn card: what the user said, what the agent did, what memory wrote, and the verdicts.

Built from one journal record (`TurnRecord`) plus its graded verdicts. Every string here is
plain text from a model or a scenario; the template escapes all of it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from memeval.report.diff import FileDiff, file_diff
from memeval.rundir.record import ModelCall, TurnRecord
from memeval.rundir.results import HumanGrade, TurnVerdicts
from memeval.rundir.staleness import Freshness
from memeval.rundir.update import AttemptRecord, CompactionRecord, SafetyRecord
from memeval.scenario.schema import Expect, Question

FAILING = ("fail", "error")


@dataclass
class Step:
    """One transcript entry: a reply, a tool call (with arguments) or a tool result."""

    kind: str  # "assistant" | "call" | "result" | "user"
    title: str
    text: str


@dataclass
class OpView:
    index: int
    kind: str  # add | replace | delete | the op's own name
    fields: list[tuple[str, str]]


@dataclass
class AttemptView:
    number: int
    ok: bool
    error: str | None
    raw: str
    n_ops: int | None


@dataclass
class GradeTarget:
    """One thing a human can grade on this card: its write expectation or its question."""

    target: str  # "write" | "question"
    label: str
    human: HumanGrade | None  # the grade already merged into verdicts.json, if any


@dataclass
class Card:
    anchor: str
    unit: str
    scenario: str
    repeat: int
    index: int
    turn: str
    session: str
    kind: str
    source: str
    user_message: str
    reply: str | None
    reply_label: str
    steps: list[Step]
    n_tool_calls: int
    memory_context: str | None
    agent_error: str | None
    status: str
    strategy: str
    summary: str | None
    attempts: list[AttemptView]
    ops: list[OpView]
    safety: list[SafetyRecord]
    blocked: list[str]
    compaction: CompactionRecord | None
    errors: list[str]
    calls: list[ModelCall]
    tokens: int
    update_s: float | None
    file_chars: int
    delta_chars: int
    diff: FileDiff
    expect: Expect | None
    question: Question | None
    verdicts: TurnVerdicts | None
    grades: list[GradeTarget] = field(default_factory=list)
    trace_url: str | None = None
    losses: list[dict[str, Any]] = field(default_factory=list)  # facts this turn removed
    memory_key: str | None = None  # key of memory_context in the page's shared JSON
    # --async-memory: earlier turns whose update was in flight when memory was read, those
    # of them that changed memory (the read missed them), and when this update landed
    in_flight: tuple[str, ...] = ()
    missed: tuple[str, ...] = ()
    lag_s: float | None = None

    @property
    def stale(self) -> bool:
        return bool(self.missed)

    @property
    def agent_call_errors(self) -> list[str]:
        """Failed agent model calls of a turn the agent still answered (one it answered
        without: the built-in agent answers at once after a call round it cannot use)."""
        if self.agent_error:
            return []
        return [c.error for c in self.calls if c.role == "agent" and c.error]

    @property
    def failing(self) -> bool:
        """A failed or errored verdict, or a pipeline problem a reviewer must look at."""
        if self.agent_error or self.status in _BAD_STATUS:
            return True
        v = self.verdicts
        if v is None:
            return False
        finals = [v.final.verdict] + [x.verdict for x in (v.write, v.question) if x]
        return any(f in FAILING for f in finals)


_BAD_STATUS = {"rejected-after-retries", "dropped-over-cap", "failed", "skipped-safety-unavailable"}


def build_card(
    rec: TurnRecord,
    *,
    unit: str,
    before: str,
    after: str,
    verdicts: TurnVerdicts | None,
    trace_url: str | None,
    freshness: Freshness | None = None,
) -> Card:
    """Assemble the card for one turn; `before`/`after` are the file around this turn."""
    update = rec.update
    steps = transcript_steps(rec.messages)
    reply = rec.answer
    if reply is None:
        replies = [s.text for s in steps if s.kind == "assistant"]
        reply = replies[-1] if replies else None
    update_s = rec.timings.get("update_s", update.timings.get("total"))
    card = Card(
        anchor=f"{unit}-t{rec.index}",
        unit=unit,
        scenario=rec.scenario,
        repeat=rec.repeat,
        index=rec.index,
        turn=rec.turn,
        session=rec.session,
        kind=rec.session_kind,
        source=rec.source,
        user_message=rec.user_message,
        reply=reply,
        reply_label="answer" if rec.session_kind == "eval" else "reply (scripted)",
        steps=steps,
        n_tool_calls=sum(1 for s in steps if s.kind == "call"),
        memory_context=rec.memory_context,
        agent_error=rec.agent_error,
        status=update.status or "—",
        strategy=update.strategy,
        summary=update.summary,
        attempts=[_attempt(a) for a in update.attempts],
        ops=[_op(i, op) for i, op in enumerate(update.ops)],
        safety=list(update.safety),
        blocked=list(update.blocked),
        compaction=update.compaction,
        errors=list(update.errors),
        calls=list(rec.calls),
        tokens=sum(c.tokens for c in rec.calls),
        update_s=update_s,
        file_chars=rec.file_chars,
        delta_chars=len(after) - len(before),
        diff=file_diff(before, after),
        expect=rec.expect,
        question=rec.question,
        verdicts=verdicts,
        trace_url=trace_url,
        in_flight=freshness.in_flight if freshness is not None else (),
        missed=freshness.missed if freshness is not None else (),
        lag_s=rec.timings.get("lag_s"),
    )
    card.grades = _grade_targets(rec, verdicts)
    return card


def transcript_steps(messages: list[dict[str, Any]]) -> list[Step]:
    """The turn after the user's message: replies, tool calls and their results, in order."""
    steps: list[Step] = []
    for m in messages:
        role = m.get("role")
        if role == "user":
            continue
        if role == "assistant":
            if m.get("content"):
                steps.append(Step("assistant", "assistant", str(m["content"])))
            for call in m.get("tool_calls") or []:
                fn = call.get("function") or {}
                steps.append(Step("call", str(fn.get("name") or "?"), pretty(fn.get("arguments"))))
        elif role == "tool":
            steps.append(Step("result", str(m.get("name") or "result"), pretty(m.get("content"))))
        else:
            steps.append(Step(str(role or "?"), str(role or "?"), pretty(m.get("content"))))
    return steps


def pretty(value: Any) -> str:
    """JSON (or a JSON string) pretty-printed; anything else as text."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    try:
        return json.dumps(value, indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def _attempt(a: AttemptRecord) -> AttemptView:
    return AttemptView(
        number=a.number,
        ok=not a.error,
        error=a.error,
        raw=a.raw,
        n_ops=len(a.ops) if a.ops is not None else None,
    )


def _op(index: int, op: Any) -> OpView:
    if not isinstance(op, dict):
        return OpView(index, "?", [("op", pretty(op))])
    kind = str(op.get("op") or op.get("kind") or op.get("type") or "?")
    if kind == "replace" and op.get("new") == "":
        kind = "delete"
    fields = [
        (str(k), v if isinstance(v, str) else pretty(v))
        for k, v in op.items()
        if k not in ("op", "kind", "type") and not (kind == "delete" and k == "new")
    ]
    return OpView(index, kind, fields)


def _grade_targets(rec: TurnRecord, v: TurnVerdicts | None) -> list[GradeTarget]:
    targets: list[GradeTarget] = []
    if rec.question is not None:
        targets.append(GradeTarget("question", "answer", v.human if v else None))
    if rec.expect is not None or (v is not None and v.write_checks):
        targets.append(GradeTarget("write", "write", v.write_human if v else None))
    return targets
