"""The memory-system extension point: what to inject, what to learn, what it holds now.

Three methods are required (`MemorySystem`); the optional hooks a system may also have are
protocols of their own, checked with isinstance: `SessionAware` (told when a session
starts), `Restorable` (brought back to a resumed run's last turn), `Closeable`,
`QueryAware` (picks what to inject by the user's message, as retrieval does) and
`ToolProvider` (offers the agent tools of its own, such as a memory search).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from memeval.tools import MemoryTool
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


@runtime_checkable
class SessionAware(Protocol):
    async def start_session(self, key: MemoryKey, session: SessionStart) -> None:
        """A session begins (conversation history was reset); oracle and full-history use it."""
        ...


@runtime_checkable
class Restorable(Protocol):
    async def restore(
        self, key: MemoryKey, snapshot: str, turns: Sequence[tuple[str, Turn]]
    ) -> None:
        """Continue a resumed run: `snapshot` is the memory after its last complete turn and
        `turns` every completed turn as (session id, turn), in order."""
        ...


@runtime_checkable
class Closeable(Protocol):
    def close(self) -> None:
        """Release what the system holds (a store's connections) at the end of its unit."""
        ...


@runtime_checkable
class QueryAware(Protocol):
    async def context_for(self, key: MemoryKey, query: str) -> str | None:
        """The system message for a request whose user message is `query`; replay calls this
        instead of `context` when a system has it (retrieval picks its top-k by the query)."""
        ...


@runtime_checkable
class ToolProvider(Protocol):
    def memory_tools(self, key: MemoryKey) -> Sequence[MemoryTool]:
        """Tools offered to the agent on every live turn of `key` (besides the scenario's)."""
        ...


@runtime_checkable
class Describable(Protocol):
    def settings(self) -> Mapping[str, Any]:
        """What shapes this system's results (top-k, budgets, modes), recorded in run.json."""
        ...


async def read_memory(system: MemorySystem, key: MemoryKey, query: str) -> str | None:
    """What to inject for a request whose user message is `query`."""
    if isinstance(system, QueryAware):
        return await system.context_for(key, query)
    return await system.context(key)


def memory_tools(system: MemorySystem, key: MemoryKey) -> Sequence[MemoryTool]:
    """The tools the system offers the agent for `key` (none for most systems)."""
    return system.memory_tools(key) if isinstance(system, ToolProvider) else ()
