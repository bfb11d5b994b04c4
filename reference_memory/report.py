"""What one memory update did: the record the harness reads and reports.

The pipeline never raises to its caller; everything that happened — every model call,
attempt, rejection, safety verdict, compaction and timing — lands here instead.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    WRITTEN = "written"  # a new version was stored
    UNCHANGED = "unchanged"  # nothing worth keeping (empty op list, or every op was a no-op)
    REJECTED = "rejected-after-retries"  # the updater never produced a batch that applied
    DROPPED = "dropped-over-cap"  # could not get under the cap; the last good file stays
    BLOCKED = "blocked"  # every proposed op was blocked by the safety gate
    SKIPPED_SAFETY = "skipped-safety-unavailable"  # the gate could not run; nothing written
    FAILED = "failed"  # any other failure (summarizer error, store error...)
    NOT_COMPLETED = "skipped-incomplete-turn"  # the turn was paused; nothing learned


@dataclass
class CallRecord:
    """One model call made by the pipeline."""

    role: str
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached: bool = False
    error: str | None = None


@dataclass
class Attempt:
    """One updater attempt: the raw answer, the parsed ops and why it was rejected (if it was)."""

    number: int
    raw: str = ""
    ops: list[dict[str, Any]] | None = None
    error: str | None = None


@dataclass
class SafetyVerdict:
    """The gate's decision on one piece of new text."""

    text: str
    verdict: str  # "allow" | "block" | "error"
    reason: str = ""
    op_index: int | None = None  # index in the accepted batch; None for compaction output


@dataclass
class CompactionReport:
    before_chars: int
    after_chars: int
    attempts: int = 0
    reached_target: bool = False
    accepted: bool = False
    text_before: str = ""  # the file after this turn's edits, before compaction
    text_after: str = ""  # the compacted file (empty when no attempt was accepted)
    user_lines_lost: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass
class UpdateReport:
    status: str = Status.UNCHANGED.value
    strategy: str = "ops"  # which updater strategy produced the ops
    safety_strategy: str = ""  # which safety strategy judged the new text ("" in older reports)
    summary: str | None = None
    attempts: list[Attempt] = field(default_factory=list)
    ops: list[dict[str, Any]] = field(default_factory=list)  # applied, in order, after safety
    safety: list[SafetyVerdict] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    compaction: CompactionReport | None = None
    calls: list[CallRecord] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    file_before: str = ""
    file_after: str = ""
    timings: dict[str, float] = field(default_factory=dict)  # step -> seconds, plus "total"

    @property
    def written(self) -> bool:
        return self.status == Status.WRITTEN.value

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> UpdateReport:
        data = dict(data)
        data["attempts"] = [Attempt(**a) for a in data.get("attempts", [])]
        data["safety"] = [SafetyVerdict(**s) for s in data.get("safety", [])]
        data["calls"] = [CallRecord(**c) for c in data.get("calls", [])]
        if data.get("compaction") is not None:
            data["compaction"] = CompactionReport(**data["compaction"])
        return cls(**data)
