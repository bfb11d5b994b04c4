"""`file`: the reference pipeline (reference_memory.FileMemory) on a store of its own."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from memeval.systems.base import MemoryKey
from reference_memory import FileMemory
from reference_memory.model import MemoryModel
from reference_memory.report import UpdateReport
from reference_memory.turn import Turn


class FileSystemMemory:
    name = "file"

    def __init__(
        self,
        models: Mapping[str, MemoryModel],
        store: Any,
        **options: Any,
    ) -> None:
        self.store = store
        self.memory = FileMemory(models, store, **options)

    async def context(self, key: MemoryKey) -> str | None:
        return await self.memory.context(key.user, key.space)

    async def observe(self, key: MemoryKey, turn: Turn) -> UpdateReport:
        return await self.memory.update(key.user, key.space, turn)

    async def snapshot(self, key: MemoryKey) -> str:
        return await asyncio.to_thread(self.store.get, key.user, key.space)

    async def restore(
        self, key: MemoryKey, snapshot: str, turns: Sequence[tuple[str, Turn]]
    ) -> None:
        """A resumed run continues from the last complete turn's file: a write made by the turn
        that was in flight when the run died is superseded by a new version."""
        current = await self.snapshot(key)
        if current != snapshot:
            await asyncio.to_thread(self.store.put, key.user, key.space, snapshot)

    def close(self) -> None:
        close = getattr(self.store, "close", None)
        if callable(close):
            close()
