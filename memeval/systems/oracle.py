"""`oracle`: serves the scenario's hand-written `reference_memory` and writes nothing, which
separates read-side failures (the agent ignored good memory) from write-side ones."""

from __future__ import annotations

from collections.abc import Sequence

from memeval.systems.base import MemoryKey, SessionStart
from reference_memory import SKELETON
from reference_memory.report import UpdateReport
from reference_memory.templates import render
from reference_memory.turn import Turn


class OracleMemory:
    name = "oracle"

    def __init__(self) -> None:
        self._files: dict[MemoryKey, str] = {}

    async def start_session(self, key: MemoryKey, session: SessionStart) -> None:
        if session.reference_memory is not None:
            self._files[key] = session.reference_memory

    async def context(self, key: MemoryKey) -> str | None:
        return render("context", file=self._files.get(key, SKELETON))

    async def observe(self, key: MemoryKey, turn: Turn) -> UpdateReport:
        text = self._files.get(key, SKELETON)
        return UpdateReport(
            status="unchanged", strategy="oracle", file_before=text, file_after=text
        )

    async def snapshot(self, key: MemoryKey) -> str:
        return self._files.get(key, SKELETON)

    async def restore(
        self, key: MemoryKey, snapshot: str, turns: Sequence[tuple[str, Turn]]
    ) -> None:
        self._files[key] = snapshot
