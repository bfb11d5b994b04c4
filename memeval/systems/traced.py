"""TracedMemorySystem: any MemorySystem, with its reads and updates as spans.

`observe()` becomes a CHAIN span "memory.update" holding the file before and after, the
edit ops, attempts, safety verdicts and compaction from the UpdateReport; the pipeline's
model calls (through TracedModel) nest beneath it by context. `context()` becomes a
RETRIEVER span "memory.context" whose one document is the injected text.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

from opentelemetry.trace import Span
from opentelemetry.trace.status import Status, StatusCode

from memeval.systems.base import MemoryKey, MemorySystem, read_memory
from memeval.tracing.attributes import CHAIN, RETRIEVER, Attributes, io_value, to_json
from reference_memory.report import Status as UpdateStatus
from reference_memory.report import UpdateReport
from reference_memory.turn import Turn

if TYPE_CHECKING:
    from memeval.tracing.spans import Tracing

DOC = "retrieval.documents.0.document."
FAILED = {
    UpdateStatus.REJECTED.value,
    UpdateStatus.DROPPED.value,
    UpdateStatus.SKIPPED_SAFETY.value,
    UpdateStatus.FAILED.value,
}


class TracedMemorySystem:
    """Wraps a memory system; answers and reports pass through unchanged."""

    def __init__(self, inner: MemorySystem, tracing: Tracing) -> None:
        self.inner = inner
        self.tracing = tracing
        self.name = inner.name

    def __getattr__(self, attr: str) -> Any:
        # Optional hooks (start_session, restore, close) of the wrapped system stay reachable.
        if attr == "inner":
            raise AttributeError(attr)
        return getattr(self.inner, attr)

    async def context(self, key: MemoryKey) -> str | None:
        return await self._read(key, None)

    async def context_for(self, key: MemoryKey, query: str) -> str | None:
        return await self._read(key, query)

    async def _read(self, key: MemoryKey, query: str | None) -> str | None:
        async def inner() -> str | None:
            if query is None:
                return await self.inner.context(key)
            return await read_memory(self.inner, key, query)

        if not self.tracing.enabled:
            return await inner()
        attrs = {"memeval.memory.system": self.name, **io_value("input", query or _key(key))}
        with self.tracing.span("memory.context", RETRIEVER, attrs) as span:
            text = await inner()
            span.set_attributes(
                {
                    DOC + "id": _key(key),
                    DOC + "content": text or "",
                    "memeval.memory.injected": text is not None,
                    "memeval.memory.chars": len(text or ""),
                    **io_value("output", text or ""),
                }
            )
            return text

    async def observe(self, key: MemoryKey, turn: Turn) -> UpdateReport:
        if not self.tracing.enabled:
            return await self.inner.observe(key, turn)
        attrs = {
            "memeval.memory.system": self.name,
            "memeval.memory.key": _key(key),
            "memeval.turn.completed": turn.completed,
            **io_value("input", turn.render()),
        }
        with self.tracing.span("memory.update", CHAIN, attrs) as span:
            report = await self.inner.observe(key, turn)
            record_update(span, report)
            return report

    async def snapshot(self, key: MemoryKey) -> str:
        return await self.inner.snapshot(key)


def record_update(span: Span, report: UpdateReport) -> None:
    """Everything an UpdateReport says, as attributes and ordered events on `span`."""
    span.set_attributes(update_attributes(report))
    for attempt in report.attempts:
        span.add_event(
            "updater.attempt",
            {
                "number": attempt.number,
                "ops": len(attempt.ops or []),
                "error": attempt.error or "",
                "raw": attempt.raw,
            },
        )
    for verdict in report.safety:
        event: Attributes = {
            "verdict": verdict.verdict,
            "text": verdict.text,
            "reason": verdict.reason,
        }
        if verdict.op_index is not None:
            event["op_index"] = verdict.op_index
        span.add_event("safety.verdict", event)
    if report.status in FAILED:
        detail = report.errors[0] if report.errors else ""
        span.set_status(Status(StatusCode.ERROR, f"{report.status}: {detail}".rstrip(": ")))


def update_attributes(report: UpdateReport) -> Attributes:
    before, after = report.file_before, report.file_after
    attrs: Attributes = {
        "memeval.update.status": report.status,
        "memeval.update.strategy": report.strategy,
        "memeval.update.summary": report.summary or "",
        "memeval.update.ops": to_json(report.ops),
        "memeval.update.ops_count": len(report.ops),
        "memeval.update.attempts": len(report.attempts),
        "memeval.update.blocked": to_json(report.blocked),
        "memeval.update.blocked_count": len(report.blocked),
        "memeval.update.errors": to_json(report.errors),
        "memeval.update.timings": to_json(report.timings),
        "memeval.update.calls": len(report.calls),
        "memeval.update.tokens": sum(c.prompt_tokens + c.completion_tokens for c in report.calls),
        "memeval.memory.file_before": before,
        "memeval.memory.file_after": after,
        "memeval.memory.chars_before": len(before),
        "memeval.memory.chars_after": len(after),
        "memeval.memory.changed": before != after,
        **io_value("output", after),
    }
    for step, seconds in report.timings.items():
        attrs[f"memeval.update.timing.{step}_s"] = float(seconds)
    if before != after:
        attrs["memeval.memory.diff"] = "".join(
            difflib.unified_diff(
                before.splitlines(keepends=True), after.splitlines(keepends=True), "before", "after"
            )
        )
    compaction = report.compaction
    if compaction is not None:
        attrs.update(
            {
                "memeval.memory.after_edits": compaction.text_before,
                "memeval.compaction.before_chars": compaction.before_chars,
                "memeval.compaction.after_chars": compaction.after_chars,
                "memeval.compaction.attempts": compaction.attempts,
                "memeval.compaction.reached_target": compaction.reached_target,
                "memeval.compaction.accepted": compaction.accepted,
                "memeval.compaction.text_after": compaction.text_after,
                "memeval.compaction.user_lines_lost": to_json(compaction.user_lines_lost),
                "memeval.compaction.errors": to_json(compaction.errors),
            }
        )
    return attrs


def _key(key: MemoryKey) -> str:
    return f"{key.user}/{key.space}"
