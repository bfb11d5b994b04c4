"""The memory-system extension point: what to inject, what to learn, what it holds now."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from reference_memory.report import UpdateReport
from reference_memory.turn import Turn


@dataclass(frozen=True)
class MemoryKey:
    user: str
    space: str


@dataclass(frozen=True)
class SessionStart:
    """Told to systems that care (optional hook `start_session`) when a session begins."""

    id: str
    kind: str
    reference_memory: str | None = None


@runtime_checkable
class MemorySystem(Protocol):
    name: str

    async def context(self, key: MemoryKey) -> str | None:
        """The system message to inject into this request, or None for nothing."""
        ...

    async def observe(self, key: MemoryKey, turn: Turn) -> UpdateReport:
        """Learn from a completed turn; never raises (failures go into the report)."""
        ...

    async def snapshot(self, key: MemoryKey) -> str:
        """The memory as it stands now (the file, for file memory)."""
        ...
