"""Replaying one scenario repeat: sessions in order, history reset between them, the memory
system observing every turn, a snapshot and a journal line after each.

By default each turn waits for its memory update before the next turn starts. With
`--async-memory` (`Unit.async_memory`) the next turn starts as soon as the agent has answered
(after the session's `think_time_s`), as in production: updates run in the background,
serialized per key only by the memory system itself, and each turn records which earlier
updates were still in flight when its memory was read. A new session starts once every
update has landed: sessions are apart in time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from memeval.agent import Agent
from memeval.models.accounting import TurnCalls
from memeval.models.base import CallRecord, Message
from memeval.replay.landings import Landings
from memeval.replay.seed import seed_messages
from memeval.rundir.create import snapshot_path, utc_now
from memeval.rundir.record import ModelCall, ToolCallRecord, TurnRecord, append_event
from memeval.rundir.update import UpdateRecord
from memeval.scenario.schema import ResolvedScenario, ResolvedSession, TurnSpec
from memeval.systems.base import (
    MemoryKey,
    MemorySystem,
    Restorable,
    SessionAware,
    SessionStart,
    memory_tools,
    read_memory,
)
from memeval.tools import FixtureTools
from memeval.tracing.tools import TracedTools
from reference_memory.report import Status, UpdateReport
from reference_memory.turn import Turn

__all__ = ["ProgressHook", "Unit", "replay", "seed_messages"]

ProgressHook = Callable[[str, str, int], None]  # (session id, turn id, model calls so far)


@dataclass
class Unit:
    """One scenario repeat with everything it runs through."""

    scenario: ResolvedScenario
    repeat: int
    system: MemorySystem
    agent: Agent
    key: MemoryKey
    calls: TurnCalls  # the sink every model wrapper of this unit records into
    tracing: Any
    done: list[TurnRecord] = field(default_factory=list)  # completed turns (resume)
    total_calls: int = 0
    async_memory: bool = False  # the next turn does not wait for the update (--async-memory)


async def replay(unit: Unit, run_dir: Path, on_turn: ProgressHook | None = None) -> None:
    """Play every turn not yet in `unit.done`, appending one TurnRecord per turn."""
    scenario = unit.scenario
    done_ids = {record.turn for record in unit.done}
    index = 0
    landings = Landings()
    try:
        with unit.tracing.scenario(scenario.name, unit.repeat):
            for session_index, session in enumerate(scenario.sessions):
                remaining = [t for t in session.turns if t.id not in done_ids]
                if not remaining:
                    index += len(session.turns)
                    continue
                history: list[Message] = []
                if len(remaining) < len(session.turns):  # resumed mid-session
                    for record in unit.done:
                        if record.session == session.id:
                            history.extend(record.messages)
                else:  # a fresh session (never one resumed mid-way: its file is restored)
                    await _start_session(unit, session)
                    await _set_initial_memory(unit, session)
                with unit.tracing.session(session.id, scenario.user, session.kind):
                    for turn in session.turns:
                        if turn.id in done_ids:
                            index += 1
                            continue
                        spot = _Spot(session, session_index, turn, index)
                        messages = await _play_turn(unit, run_dir, spot, history, landings, on_turn)
                        history.extend(messages)
                        index += 1
                        think = session.think_time_s
                        if unit.async_memory and think > 0 and turn is not remaining[-1]:
                            await asyncio.sleep(think)
                    await landings.drain()
    except BaseException:
        await landings.abandon()
        raise


@dataclass(frozen=True)
class _Spot:
    """Where a turn sits: its session and its position in the unit."""

    session: ResolvedSession
    session_index: int
    turn: TurnSpec
    index: int


async def _start_session(unit: Unit, session: ResolvedSession) -> None:
    if isinstance(unit.system, SessionAware):
        start = SessionStart(
            id=session.id, kind=session.kind, reference_memory=session.reference_memory
        )
        await unit.system.start_session(unit.key, start)


NO_FILE = frozenset({"none", "full-history", "oracle"})  # systems that hold no settable file


async def _set_initial_memory(unit: Unit, session: ResolvedSession) -> None:
    """A session with `initial_memory` starts from that file: before its first turn the
    system's file for the unit's key is set to it (`Restorable.restore`), so the first
    update's `file_before` is that file. Systems without a file (none, full-history, and
    oracle, which serves reference files) ignore it. A resumed run never calls this for a
    session it resumes mid-way (the restored snapshot holds the later turns)."""
    text = session.initial_memory
    if text is None or unit.system.name in NO_FILE or not isinstance(unit.system, Restorable):
        return
    await unit.system.restore(unit.key, text, [])


@dataclass
class _Answered:
    """A turn once the user has the answer: everything its journal line needs but the update."""

    spot: _Spot
    started_at: str
    t0: float  # perf_counter at the turn's start
    answered: float  # perf_counter when the agent answered (or the seed transcript was ready)
    messages: list[Message]
    tool_calls: list[ToolCallRecord]
    calls: list[CallRecord]  # this turn's model calls, the update's included as they come
    timings: dict[str, float]
    memory_context: str | None = None
    pending: list[str] = field(default_factory=list)
    answer: str | None = None
    agent_error: str | None = None
    trace_id: str | None = None
    span_id: str | None = None


async def _play_turn(
    unit: Unit,
    run_dir: Path,
    spot: _Spot,
    history: Sequence[Message],
    landings: Landings,
    on_turn: ProgressHook | None,
) -> list[Message]:
    """The conversation part of a turn; its memory update lands in a task of its own (awaited
    here unless the memory is asynchronous). Returns the turn's messages for the history."""
    session, turn = spot.session, spot.turn
    started_at, t0 = utc_now(), time.perf_counter()
    with (
        unit.calls.turn() as calls,
        unit.tracing.turn(turn.id, turn.user, session_kind=session.kind) as span,
    ):
        timings: dict[str, float] = {}
        if session.kind == "seed":
            messages, tool_calls = seed_messages(turn, spot.index)
            done = _Answered(
                spot, started_at, t0, time.perf_counter(), messages, tool_calls, calls, timings
            )
        else:
            pending = landings.in_flight()
            memory_context = await read_memory(unit.system, unit.key, turn.user)
            ta = time.perf_counter()
            result = await unit.agent.respond(
                history=list(history),
                user_message=turn.user,
                memory=memory_context,
                tools=TracedTools(
                    FixtureTools(session.tools, memory_tools(unit.system, unit.key)),
                    unit.tracing,
                ),
            )
            timings["agent_s"] = time.perf_counter() - ta
            done = _Answered(
                spot,
                started_at,
                t0,
                time.perf_counter(),
                result.messages,
                result.tool_calls,
                calls,
                timings,
                memory_context=memory_context,
                pending=pending,
                answer=result.answer,
                agent_error=result.error,
            )
        done.trace_id, done.span_id = unit.tracing.ids(span)
        unit.tracing.record_turn_outcome(span, answer=done.answer, error=done.agent_error)

        async def land(landed: Callable[[], None], my_turn: Callable[[], Awaitable[None]]) -> None:
            record = await _land(unit, run_dir, done, landed)
            await my_turn()
            append_event(run_dir, record)
            unit.total_calls += len(record.calls)
            if on_turn:
                on_turn(session.id, turn.id, unit.total_calls)

        landing = landings.start(turn.id, land)
        if not unit.async_memory:
            await landing
    return done.messages


async def _land(
    unit: Unit, run_dir: Path, done: _Answered, landed: Callable[[], None]
) -> TurnRecord:
    """Update memory from the turn, take the snapshot, and build the turn's journal line."""
    spot, session, turn = done.spot, done.spot.session, done.spot.turn
    timings = done.timings
    tu = time.perf_counter()
    completed = done.agent_error is None
    update = await _observe(unit, Turn(messages=done.messages, completed=completed))
    landed()
    now = time.perf_counter()
    timings["update_s"] = now - tu
    if unit.async_memory:
        timings["lag_s"] = now - done.answered
        # the memory this update left is its own file_after: a later update of the same key
        # may already be writing by the time snapshot() could read the store
        snapshot = _file_after(update) or await unit.system.snapshot(unit.key)
    else:
        snapshot = await unit.system.snapshot(unit.key)
    rel = snapshot_path(unit.scenario.name, unit.repeat, spot.index, turn.id)
    (run_dir / rel).parent.mkdir(parents=True, exist_ok=True)
    (run_dir / rel).write_text(snapshot, encoding="utf-8")
    timings["turn_s"] = time.perf_counter() - done.t0
    return TurnRecord(
        scenario=unit.scenario.name,
        repeat=unit.repeat,
        index=spot.index,
        session=session.id,
        session_index=spot.session_index,
        session_kind=session.kind,
        source=session.source,
        turn=turn.id,
        user_message=turn.user,
        messages=done.messages,
        answer=done.answer,
        tool_calls=done.tool_calls,
        memory_context=done.memory_context,
        pending_at_read=done.pending,
        expect=turn.expect,
        question=turn.question,
        update=_update_record(update),
        snapshot=rel,
        file_chars=len(snapshot),
        timings=timings,
        calls=_model_calls(done.calls),
        agent_error=done.agent_error,
        trace_id=done.trace_id,
        span_id=done.span_id,
        started_at=done.started_at,
        finished_at=utc_now(),
    )


def _file_after(report: object) -> str:
    after = getattr(report, "file_after", "")
    return after if isinstance(after, str) else ""


def _model_calls(calls: list[CallRecord]) -> list[ModelCall]:
    return [ModelCall.model_validate(asdict(call)) for call in calls]


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
