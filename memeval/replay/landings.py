"""Where each turn's memory update lands: in a task of its own, awaited at once or (with
`--async-memory`) left running while the conversation goes on. Journal lines keep turn order
either way, so a resumed run always continues from a prefix of the turns."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

# a turn's landing: land(landed, my_turn) -- see Landings.start
Land = Callable[[Callable[[], None], Callable[[], Awaitable[None]]], Awaitable[None]]


class EarlierTurnLost(Exception):
    """A landing gives up its journal line because an earlier turn's landing failed."""


class Landings:
    """The memory updates of one unit, each landing (update, snapshot, journal line) in a task
    of its own. Journal lines keep turn order, so a resumed run always continues a prefix."""

    def __init__(self) -> None:
        self._tasks: list[asyncio.Task[None]] = []
        self._in_flight: dict[str, None] = {}  # turn ids whose update has not landed, in order

    def in_flight(self) -> list[str]:
        return list(self._in_flight)

    def start(self, turn_id: str, land: Land) -> asyncio.Task[None]:
        """Run `land(landed, my_turn)`: it calls `landed()` when the update returns and awaits
        `my_turn()` (the previous landing's end) before appending its journal line."""
        previous = self._tasks[-1] if self._tasks else None
        self._in_flight[turn_id] = None

        def landed() -> None:
            self._in_flight.pop(turn_id, None)

        async def my_turn() -> None:
            if previous is not None:
                await asyncio.wait([previous])
                if previous.cancelled() or previous.exception() is not None:
                    raise EarlierTurnLost(turn_id)

        async def run() -> None:
            try:
                await land(landed, my_turn)
            finally:
                landed()

        task = asyncio.create_task(run())
        self._tasks.append(task)
        return task

    async def drain(self) -> None:
        """Wait for every update; the first failure is raised once all have finished."""
        tasks, self._tasks = self._tasks, []
        results = await asyncio.gather(*tasks, return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        if failures:
            raise next((f for f in failures if not isinstance(f, EarlierTurnLost)), failures[0])

    async def abandon(self) -> None:
        """The unit stopped: cancel what is still running (those turns are not journaled)."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
