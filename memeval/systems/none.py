"""`none`: no memory at all. Memory-dependent questions should fail; one that passes does not
test memory."""

from __future__ import annotations

from memeval.systems.base import MemoryKey
from reference_memory.report import UpdateReport
from reference_memory.turn import Turn


class NoMemory:
    name = "none"

    async def context(self, key: MemoryKey) -> str | None:
        return None

    async def observe(self, key: MemoryKey, turn: Turn) -> UpdateReport:
        return UpdateReport(status="unchanged", strategy="none")

    async def snapshot(self, key: MemoryKey) -> str:
        return ""
