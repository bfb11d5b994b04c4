"""The memory update of one turn as the saved run holds it: a typed mirror of
`reference_memory.UpdateReport`.

The pipeline reports with plain dataclasses (it imports nothing from memeval and needs no
pydantic); the run record validates the same fields here, so every consumer reads attributes
instead of re-parsing dicts. A test keeps the two field lists equal.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from reference_memory.report import UpdateReport


class Record(BaseModel):
    """Base of every saved-run model: a key this memeval does not know is an error."""

    model_config = ConfigDict(extra="forbid")


class PipelineCall(Record):
    """One model call made by the pipeline (`reference_memory.CallRecord`)."""

    role: str
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached: bool = False
    error: str | None = None

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class AttemptRecord(Record):
    """One updater attempt: the raw answer, the parsed ops, and why it was rejected."""

    number: int
    raw: str = ""
    ops: list[dict[str, Any]] | None = None
    error: str | None = None


class SafetyRecord(Record):
    """The safety gate's decision on one piece of new text."""

    text: str
    verdict: str  # "allow" | "block" | "error"
    reason: str = ""
    op_index: int | None = None  # index in the accepted batch; None for compaction output


class CompactionRecord(Record):
    before_chars: int
    after_chars: int
    attempts: int = 0
    reached_target: bool = False
    accepted: bool = False
    text_before: str = ""  # the file after this turn's edits, before compaction
    text_after: str = ""  # the compacted file (empty when no attempt was accepted)
    user_lines_lost: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)


class UpdateRecord(Record):
    """What the memory system did after the turn. `ops` are the applied edit ops as the
    pipeline emitted them (`{"op": "add", "anchor": ..., "text": ...}`, extra keys kept)."""

    status: str = "unchanged"
    strategy: str = "ops"
    safety_strategy: str = ""
    summary: str | None = None
    attempts: list[AttemptRecord] = Field(default_factory=list)
    ops: list[dict[str, Any]] = Field(default_factory=list)
    safety: list[SafetyRecord] = Field(default_factory=list)
    blocked: list[str] = Field(default_factory=list)
    compaction: CompactionRecord | None = None
    calls: list[PipelineCall] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    file_before: str = ""
    file_after: str = ""
    timings: dict[str, float] = Field(default_factory=dict)  # step -> seconds, plus "total"

    @classmethod
    def from_report(cls, report: UpdateReport) -> UpdateRecord:
        return cls.model_validate(report.to_dict())
