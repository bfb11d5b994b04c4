"""Replaying one scenario repeat: sessions in order, history reset between them, the memory
system observing every turn, a snapshot and a journal line after each."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from memeval.agent import Agent
from memeval.models.base import CallRecord, Message
from memeval.rundir.create import snapshot_path, utc_now
from memeval.rundir.record import ModelCall, ToolCallRecord, TurnRecord, append_event
from memeval.rundir.update import UpdateRecord
from memeval.scenario.schema import ResolvedScenario, ResolvedSession, TurnSpec
from memeval.systems.base import MemoryKey, MemorySystem, SessionAware, SessionStart
from memeval.tools import FixtureTools
from memeval.tracing.tools import TracedTools
from reference_memory.report import Status, UpdateReport
from reference_memory.turn import Turn

ProgressHook = Callable[[str, str, int], None]  # (session id, turn id, model calls so far)


@dataclass
class Unit:
    """One scenario repeat with everything it runs through."""

    scenario: ResolvedScenario
    repeat: int
    system: MemorySystem
    agent: Agent
    key: MemoryKey
    calls: list[CallRecord]  # the sink every model wrapper of this unit records into
    tracing: Any
    done: list[TurnRecord] = field(default_factory=list)  # completed turns (resume)
    total_calls: int = 0


def seed_messages(turn: TurnSpec, index: int) -> tuple[list[Message], list[ToolCallRecord]]:
    """A seed turn's scripted transcript as OpenAI-format messages."""
    messages: list[Message] = [{"role": "user", "content": turn.user}]
    calls: list[ToolCallRecord] = []
    for step_no, step in enumerate(turn.transcript):
        if step.tool_call is not None:
            call_id = f"call_{index}_{step_no}"
            name = str(step.tool_call.get("name", ""))
            arguments = step.tool_call.get("arguments") or {}
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": json.dumps(arguments)},
                        }
                    ],
                }
            )
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call_id,
                    "name": name,
                    "content": json.dumps(step.result, ensure_ascii=False),
                }
            )
            calls.append(
                ToolCallRecord(id=call_id, name=name, arguments=arguments, result=step.result)
            )
        if step.assistant is not None:
            messages.append({"role": "assistant", "content": step.assistant})
    return messages, calls


async def replay(unit: Unit, run_dir: Path, on_turn: ProgressHook | None = None) -> None:
    """Play every turn not yet in `unit.done`, appending one TurnRecord per turn."""
    scenario = unit.scenario
    done_ids = {record.turn for record in unit.done}
    index = 0
    with unit.tracing.scenario(scenario.name, unit.repeat):
        for session_index, session in enumerate(scenario.sessions):
            remaining = [t for t in session.turns if t.id not in done_ids]
            if not remaining:
                index += len(session.turns)
                continue
            history: list[Message] = []
            resumed = len(remaining) < len(session.turns)
            if resumed:
                for record in unit.done:
                    if record.session == session.id:
                        history.extend(record.messages)
            else:
                await _start_session(unit, session)
            with unit.tracing.session(session.id, scenario.user, session.kind):
                for turn in session.turns:
                    if turn.id in done_ids:
                        index += 1
                        continue
                    record = await _play_turn(
                        unit, run_dir, session, session_index, turn, index, history
                    )
                    append_event(run_dir, record)
                    history.extend(record.messages)
                    unit.total_calls += len(record.calls)
                    if on_turn:
                        on_turn(session.id, turn.id, unit.total_calls)
                    index += 1


async def _start_session(unit: Unit, session: ResolvedSession) -> None:
    if isinstance(unit.system, SessionAware):
        start = SessionStart(
            id=session.id, kind=session.kind, reference_memory=session.reference_memory
        )
        await unit.system.start_session(unit.key, start)


async def _play_turn(
    unit: Unit,
    run_dir: Path,
    session: ResolvedSession,
    session_index: int,
    turn: TurnSpec,
    index: int,
    history: Sequence[Message],
) -> TurnRecord:
    started_at, t0 = utc_now(), time.perf_counter()
    unit.calls.clear()
    memory_context: str | None = None
    answer: str | None = None
    agent_error: str | None = None
    timings: dict[str, float] = {}
    with unit.tracing.turn(turn.id, turn.user, session_kind=session.kind) as span:
        if session.kind == "seed":
            messages, tool_calls = seed_messages(turn, index)
        else:
            memory_context = await unit.system.context(unit.key)
            ta = time.perf_counter()
            result = await unit.agent.respond(
                history=list(history),
                user_message=turn.user,
                memory=memory_context,
                tools=TracedTools(FixtureTools(session.tools), unit.tracing),
            )
            timings["agent_s"] = time.perf_counter() - ta
            messages, tool_calls = result.messages, result.tool_calls
            answer, agent_error = result.answer, result.error
        tu = time.perf_counter()
        update = await _observe(unit, Turn(messages=messages, completed=agent_error is None))
        timings["update_s"] = time.perf_counter() - tu
        snapshot = await unit.system.snapshot(unit.key)
        rel = snapshot_path(unit.scenario.name, unit.repeat, index, turn.id)
        (run_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (run_dir / rel).write_text(snapshot, encoding="utf-8")
        trace_id, span_id = unit.tracing.ids(span)
        unit.tracing.record_turn_outcome(span, answer=answer, error=agent_error)
    timings["turn_s"] = time.perf_counter() - t0
    record = TurnRecord(
        scenario=unit.scenario.name,
        repeat=unit.repeat,
        index=index,
        session=session.id,
        session_index=session_index,
        session_kind=session.kind,
        source=session.source,
        turn=turn.id,
        user_message=turn.user,
        messages=messages,
        answer=answer,
        tool_calls=tool_calls,
        memory_context=memory_context,
        expect=turn.expect,
        question=turn.question,
        update=_update_record(update),
        snapshot=rel,
        file_chars=len(snapshot),
        timings=timings,
        calls=[ModelCall.model_validate(asdict(call)) for call in unit.calls],
        agent_error=agent_error,
        trace_id=trace_id,
        span_id=span_id,
        started_at=started_at,
        finished_at=utc_now(),
    )
    return record


def _update_record(report: UpdateReport) -> UpdateRecord:
    """The report as the run saves it; a custom system's report that does not fit the record
    is saved as a failed update saying why, never a crashed run."""
    try:
        return UpdateRecord.from_report(report)
    except (ValidationError, TypeError, AttributeError) as exc:
        first = str(exc).splitlines()[0]
        return UpdateRecord(
            status=Status.FAILED.value, errors=[f"unreadable update report: {first}"]
        )


async def _observe(unit: Unit, turn: Turn) -> UpdateReport:
    """Custom systems may raise; a failure is recorded in the report, never a crashed run."""
    try:
        return await unit.system.observe(unit.key, turn)
    except Exception as exc:
        return UpdateReport(status=Status.FAILED.value, errors=[f"{type(exc).__name__}: {exc}"])
