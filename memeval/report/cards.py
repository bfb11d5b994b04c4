"""One turn card: what the user said, what the agent did, what memory wrote, and the verdicts.

Built from one journal record (`TurnRecord`) plus its graded verdicts. Every string here is
plain text from a model or a scenario; the template escapes all of it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from memeval.report.diff import FileDiff, file_diff
from memeval.rundir.record import TurnRecord
from memeval.rundir.results import TurnVerdicts

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
class CallView:
    role: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float | None
    cached: bool
    error: str | None


@dataclass
class SafetyView:
    text: str
    verdict: str
    reason: str
    op_index: int | None


@dataclass
class CompactionView:
    before_chars: int
    after_chars: int
    attempts: int
    reached_target: bool
    accepted: bool
    user_lines_lost: list[str]
    errors: list[str]


@dataclass
class GradeTarget:
    """One thing a human can grade on this card: its write expectation or its question."""

    target: str  # "write" | "question"
    label: str
    human: dict[str, str] | None  # the grade already merged into verdicts.json, if any


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
    safety: list[SafetyView]
    blocked: list[str]
    compaction: CompactionView | None
    errors: list[str]
    calls: list[CallView]
    tokens: int
    update_s: float | None
    file_chars: int
    delta_chars: int
    diff: FileDiff
    expect: dict[str, str] | None  # {"note"}
    question: dict[str, str] | None  # {"type", "criterion"}
    verdicts: TurnVerdicts | None
    grades: list[GradeTarget] = field(default_factory=list)
    trace_url: str | None = None
    losses: list[dict[str, Any]] = field(default_factory=list)  # facts this turn removed
    memory_key: str | None = None  # key of memory_context in the page's shared JSON

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
) -> Card:
    """Assemble the card for one turn; `before`/`after` are the file around this turn."""
    update = rec.update or {}
    steps = transcript_steps(rec.messages)
    reply = rec.answer
    if reply is None:
        replies = [s.text for s in steps if s.kind == "assistant"]
        reply = replies[-1] if replies else None
    calls = [_call(c) for c in rec.calls if isinstance(c, dict)]
    tokens = sum(c.prompt_tokens + c.completion_tokens for c in calls)
    timings = update.get("timings") or {}
    update_s = rec.timings.get("update_s", timings.get("total"))
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
        status=str(update.get("status") or "—"),
        strategy=str(update.get("strategy") or ""),
        summary=update.get("summary"),
        attempts=[_attempt(a) for a in update.get("attempts") or []],
        ops=[_op(i, op) for i, op in enumerate(update.get("ops") or [])],
        safety=[_safety(s) for s in update.get("safety") or [] if isinstance(s, dict)],
        blocked=[str(b) for b in update.get("blocked") or []],
        compaction=_compaction(update.get("compaction")),
        errors=[str(e) for e in update.get("errors") or []],
        calls=calls,
        tokens=tokens,
        update_s=update_s,
        file_chars=rec.file_chars,
        delta_chars=len(after) - len(before),
        diff=file_diff(before, after),
        expect={"note": str(rec.expect.get("note") or "")} if rec.expect is not None else None,
        question=(
            {k: str(rec.question.get(k) or "") for k in ("type", "criterion")}
            if rec.question is not None
            else None
        ),
        verdicts=verdicts,
        trace_url=trace_url,
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


def _call(c: dict[str, Any]) -> CallView:
    latency = c.get("latency_s")
    return CallView(
        role=str(c.get("role") or "?"),
        model=str(c.get("model") or ""),
        prompt_tokens=int(c.get("prompt_tokens") or 0),
        completion_tokens=int(c.get("completion_tokens") or 0),
        latency_s=float(latency) if isinstance(latency, int | float) else None,
        cached=bool(c.get("cached")),
        error=str(c["error"]) if c.get("error") else None,
    )


def _safety(s: dict[str, Any]) -> SafetyView:
    index = s.get("op_index")
    return SafetyView(
        text=str(s.get("text") or ""),
        verdict=str(s.get("verdict") or "?"),
        reason=str(s.get("reason") or ""),
        op_index=index if isinstance(index, int) else None,
    )


def _compaction(k: Any) -> CompactionView | None:
    if not isinstance(k, dict):
        return None
    return CompactionView(
        before_chars=int(k.get("before_chars") or 0),
        after_chars=int(k.get("after_chars") or 0),
        attempts=int(k.get("attempts") or 0),
        reached_target=bool(k.get("reached_target")),
        accepted=bool(k.get("accepted")),
        user_lines_lost=[str(x) for x in k.get("user_lines_lost") or []],
        errors=[str(x) for x in k.get("errors") or []],
    )


def _attempt(a: dict[str, Any]) -> AttemptView:
    ops = a.get("ops")
    return AttemptView(
        number=int(a.get("number") or 0),
        ok=not a.get("error"),
        error=a.get("error"),
        raw=str(a.get("raw") or ""),
        n_ops=len(ops) if isinstance(ops, list) else None,
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
        human = v.human.model_dump() if v and v.human else None
        targets.append(GradeTarget("question", "answer", human))
    if rec.expect is not None:
        human = v.write_human.model_dump() if v and v.write_human else None
        targets.append(GradeTarget("write", "write", human))
    return targets
