"""`FileMemory`: the whole pipeline behind two calls, `context()` before a request and
`update()` after each completed turn.

update = lock the key -> read -> summarize -> propose ops -> safety gate -> apply ->
compact if over the trigger -> enforce the cap -> write one new version -> unlock. It never
raises: every call, attempt, verdict, drop and timing lands in the returned `UpdateReport`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from reference_memory.calls import Caller, ModelCallError
from reference_memory.compaction import Compactor
from reference_memory.document import CAP, missing_sections
from reference_memory.edits import EditError, EditOp, apply_op
from reference_memory.locks import KeyLocks, StoreLock
from reference_memory.model import ModelsArg
from reference_memory.report import SafetyVerdict, Status, UpdateReport
from reference_memory.safety import ClassifierSafety, SafetyStrategy
from reference_memory.store.base import CapExceeded, KeySession, Store
from reference_memory.summarizer import Summarizer
from reference_memory.templates import render
from reference_memory.turn import Turn
from reference_memory.updater import OpsUpdater, UpdateInput, UpdaterGaveUp, UpdaterStrategy

log = logging.getLogger("reference_memory")


class _Stop(Exception):
    """Ends an update early with a status (and optionally an error) already decided."""

    def __init__(self, status: Status, error: str | None = None) -> None:
        super().__init__(error or status.value)
        self.status = status
        self.error = error


class FileMemory:
    """One markdown memory file per (user, space), kept current by background model calls."""

    def __init__(
        self,
        model: ModelsArg,
        store: Store,
        *,
        updater: UpdaterStrategy | None = None,
        safety: SafetyStrategy | None = None,
        summarizer: Summarizer | None = None,
        compactor: Compactor | None = None,
        constrain_anchors: bool = False,
        call_timeout_s: float | None = 180.0,
        max_tokens: Mapping[str, int] | None = None,
    ) -> None:
        self.model = model
        self.store = store
        self.updater = updater or OpsUpdater(constrain_anchors=constrain_anchors)
        self.safety = safety or ClassifierSafety()
        self.summarizer = summarizer or Summarizer()
        self.compactor = compactor or Compactor()
        self.call_timeout_s = call_timeout_s
        self.max_tokens = dict(max_tokens or {})
        self._locks = KeyLocks()

    async def context(self, user: str, space: str) -> str:
        """The system message to inject into a request: the file plus how to use it."""
        return render("context", file=await self.read(user, space))

    async def read(self, user: str, space: str) -> str:
        """The file as it stands (never waits for a running update)."""
        return await asyncio.to_thread(self.store.get, user, space)

    async def update(self, user: str, space: str, turn: Turn) -> UpdateReport:
        """Learn from one completed turn. Never raises; the report says what happened."""
        report = UpdateReport(strategy=self.updater.name, safety_strategy=self.safety.name)
        started = time.perf_counter()
        try:
            if not turn.completed:
                report.file_before = report.file_after = await self.read(user, space)
                report.status = Status.NOT_COMPLETED.value
            else:
                await self._locked_update(user, space, turn, report)
        except Exception as exc:  # best effort: the agent's user never sees a memory failure
            report.status = Status.FAILED.value
            report.errors.append(f"{type(exc).__name__}: {exc}")
            log.warning("memory update for (%r, %r) failed: %s", user, space, exc)
            await self._fill_files(user, space, report)
        report.timings["total"] = time.perf_counter() - started
        return report

    async def _fill_files(self, user: str, space: str, report: UpdateReport) -> None:
        """After a failure nothing was written: file_after is file_before, read if never read."""
        if not report.file_before:
            try:
                report.file_before = await self.read(user, space)
            except Exception as exc:
                report.errors.append(f"reading the file for the report failed: {exc}")
        report.file_after = report.file_before

    async def _locked_update(self, user: str, space: str, turn: Turn, report: UpdateReport) -> None:
        waited = time.perf_counter()
        async with self._locks.hold((user, space)):
            store_lock = StoreLock(self.store, (user, space))
            async with store_lock.hold() as session:
                report.timings["lock_wait"] = time.perf_counter() - waited
                await self._run(session, turn, report)
            if store_lock.release_error:
                report.errors.append(f"releasing the key lock failed: {store_lock.release_error}")
                if report.written:  # the write commits with the lock (PostgreSQL): it is lost
                    report.status = Status.FAILED.value
                    report.file_after = report.file_before

    async def _run(self, session: KeySession, turn: Turn, report: UpdateReport) -> None:
        with _step(report, "read"):
            file = await asyncio.to_thread(session.get)
        report.file_before = report.file_after = file
        caller = Caller(
            self.model, report, timeout_s=self.call_timeout_s, max_tokens=self.max_tokens
        )
        try:
            text = await self._edit(file, turn, caller, report)
            if self.compactor.needed(text):
                text = await self._compact(text, caller, report)
            if len(text) > CAP:
                raise _Stop(
                    Status.DROPPED, f"file would be {len(text)} characters, over the {CAP} cap"
                )
            with _step(report, "write"):
                await asyncio.to_thread(session.put, text)
        except _Stop as stop:
            report.status = stop.status.value
            if stop.error:
                report.errors.append(stop.error)
            return
        except CapExceeded as exc:
            report.status = Status.DROPPED.value
            report.errors.append(str(exc))
            return
        report.status = Status.WRITTEN.value
        report.file_after = text

    async def _edit(self, file: str, turn: Turn, caller: Caller, report: UpdateReport) -> str:
        """Summarize, propose, gate and apply; returns the edited file."""
        summary = None
        if self.updater.uses_summary:
            with _step(report, "summarize"):
                try:
                    summary = report.summary = await self.summarizer.summarize(turn, caller)
                except ModelCallError as exc:
                    raise _Stop(Status.FAILED, f"summarizer: {exc.reason}") from exc
        with _step(report, "update"):
            try:
                ops = await self.updater.propose(UpdateInput(file, turn, summary), caller, report)
            except UpdaterGaveUp as exc:
                status = Status.REJECTED if exc.answered else Status.FAILED
                raise _Stop(status, str(exc)) from exc
        if not ops:
            raise _Stop(Status.UNCHANGED)
        with _step(report, "safety"):
            allowed = await self._gate(ops, caller, report)
        if not allowed:
            raise _Stop(Status.BLOCKED)
        text = self._apply(file, allowed, report)
        if text == file:  # every op was a no-op, or leaned on a blocked one
            raise _Stop(Status.BLOCKED if report.blocked else Status.UNCHANGED)
        return text

    async def _gate(self, ops: list[EditOp], caller: Caller, report: UpdateReport) -> list[EditOp]:
        """Ops whose new text the gate allows; any gate failure stops the whole write."""
        allowed: list[EditOp] = []
        for index, op in enumerate(ops):
            if not op.new_text.strip():
                allowed.append(op)  # a deletion brings no new text
                continue
            try:
                verdict = await self.safety.check(op.new_text, caller)
            except Exception as exc:
                report.safety.append(SafetyVerdict(op.new_text, "error", str(exc), index))
                raise _Stop(Status.SKIPPED_SAFETY, f"safety gate unavailable: {exc}") from exc
            report.safety.append(SafetyVerdict(op.new_text, verdict.verdict, verdict.reason, index))
            if verdict.allowed:
                allowed.append(op)
            else:
                report.blocked.append(op.new_text)
        return allowed

    @staticmethod
    def _apply(file: str, ops: list[EditOp], report: UpdateReport) -> str:
        """Apply ops one by one; an op that no longer applies (it leaned on a blocked op) is
        skipped and recorded. `report.ops` ends up exactly what was applied, in order."""
        text = file
        intact = not missing_sections(file)
        for op in ops:
            try:
                edited = apply_op(text, op, len(report.ops))
                if intact and missing_sections(edited):
                    raise EditError(len(report.ops), "removes or reorders a section heading")
            except EditError as exc:
                report.errors.append(
                    f"dropped after safety filtering: {exc.reason} ({op.to_dict()})"
                )
                continue
            text = edited
            report.ops.append(op.to_dict())
        return text

    async def _compact(self, text: str, caller: Caller, report: UpdateReport) -> str:
        with _step(report, "compaction"):
            outcome = await self.compactor.compact(text, caller, self.safety)
        report.compaction = outcome.report
        if outcome.safety_unavailable is not None:
            raise _Stop(
                Status.SKIPPED_SAFETY, f"safety gate unavailable: {outcome.safety_unavailable}"
            )
        return outcome.text if outcome.text is not None else text

    def close(self) -> None:
        self.store.close()


@contextmanager
def _step(report: UpdateReport, name: str) -> Iterator[None]:
    started = time.perf_counter()
    try:
        yield
    finally:
        report.timings[name] = report.timings.get(name, 0.0) + time.perf_counter() - started
