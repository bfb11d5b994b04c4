"""Memory systems: `file`, `retrieval`, `core-search` (and `core-search-inject`), `mem0`,
`none`, `full-history`, `oracle`, or a user's `pkg.mod:attr`."""

from memeval.systems.base import (
    Closeable,
    Describable,
    MemoryKey,
    MemorySystem,
    QueryAware,
    Restorable,
    SessionAware,
    SessionStart,
    ToolProvider,
)

BUILTIN = (
    "file",
    "retrieval",
    "core-search",
    "core-search-inject",
    "mem0",
    "none",
    "full-history",
    "oracle",
)

__all__ = [
    "BUILTIN",
    "Closeable",
    "Describable",
    "MemoryKey",
    "MemorySystem",
    "QueryAware",
    "Restorable",
    "SessionAware",
    "SessionStart",
    "ToolProvider",
]
