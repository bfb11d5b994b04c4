"""Memory systems: `file`, `none`, `full-history`, `oracle`, or a user's `pkg.mod:attr`."""

from memeval.systems.base import MemoryKey, MemorySystem, SessionStart

BUILTIN = ("file", "none", "full-history", "oracle")

__all__ = ["BUILTIN", "MemoryKey", "MemorySystem", "SessionStart"]
