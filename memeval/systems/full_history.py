"""`full-history`: every earlier session's transcript in context — the usual accuracy ceiling."""

from __future__ import annotations

from collections.abc import Sequence

from memeval.systems.base import MemoryKey, SessionStart
from reference_memory.report import UpdateReport
from reference_memory.turn import Turn

HEADER = (
    "Transcripts of your earlier sessions with this user, oldest first. Use them to answer "
    "from what was already established instead of redoing work."
)


class FullHistory:
    name = "full-history"

    def __init__(self) -> None:
        # key -> list of (session id, rendered turns); the last entry is the current session
        self._sessions: dict[MemoryKey, list[tuple[str, list[str]]]] = {}

    async def start_session(self, key: MemoryKey, session: SessionStart) -> None:
        self._sessions.setdefault(key, []).append((session.id, []))

    async def context(self, key: MemoryKey) -> str | None:
        text = self._render(key, include_current=False)
        return f"{HEADER}\n\n{text}" if text else None

    async def observe(self, key: MemoryKey, turn: Turn) -> UpdateReport:
        sessions = self._sessions.setdefault(key, [])
        if not sessions:
            sessions.append(("(unnamed)", []))
        sessions[-1][1].append(turn.render())
        return UpdateReport(status="unchanged", strategy="full-history")

    async def snapshot(self, key: MemoryKey) -> str:
        return self._render(key, include_current=True)

    async def restore(
        self, key: MemoryKey, snapshot: str, turns: Sequence[tuple[str, Turn]]
    ) -> None:
        """Rebuild from the completed turns of a resumed run: (session id, turn) in order."""
        sessions: list[tuple[str, list[str]]] = []
        for session_id, turn in turns:
            if not sessions or sessions[-1][0] != session_id:
                sessions.append((session_id, []))
            sessions[-1][1].append(turn.render())
        self._sessions[key] = sessions

    def _render(self, key: MemoryKey, *, include_current: bool) -> str:
        sessions = self._sessions.get(key, [])
        if not include_current:
            sessions = sessions[:-1]
        return "\n\n".join(
            f"## Session {sid}\n" + "\n".join(turns) for sid, turns in sessions if turns
        )
