"""Live progress for `memeval run`, on stderr: a bar per scenario repeat on a terminal, one
plain line per turn elsewhere (CI logs, pipes), so a long run is never silent."""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


class RunProgress:
    """Scenario, session, turn, model calls, elapsed and ETA per unit."""

    def __init__(self, enabled: bool = True, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.enabled = enabled
        self.live = enabled and self.console.is_terminal
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(bar_width=24),
            MofNCompleteColumn(),
            TextColumn("{task.fields[where]}"),
            TextColumn("calls {task.fields[calls]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            disable=not self.live,
            transient=False,
        )
        self._tasks: dict[str, TaskID] = {}
        self._counts: dict[str, list[float]] = {}  # unit -> [done, total, done at start, started]

    def __enter__(self) -> RunProgress:
        self._progress.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._progress.__exit__(exc_type, exc, tb)

    def add_unit(
        self, unit: str, total_turns: int, done: int, started: float | None = None
    ) -> None:
        """`started`: time.monotonic() when its work began (default: now)."""
        self._tasks[unit] = self._progress.add_task(
            unit, total=total_turns, completed=done, where="", calls=0
        )
        self._counts[unit] = [done, total_turns, done, started or time.monotonic()]

    def turn_done(self, unit: str, session: str, turn: str, calls: int) -> None:
        self._progress.update(
            self._tasks[unit], advance=1, where=f"{session} · {turn}", calls=calls
        )
        counts = self._counts[unit]
        counts[0] += 1
        if self.enabled and not self.live:
            done, total, first, started = counts
            elapsed = time.monotonic() - started
            eta = elapsed / (done - first) * (total - done)
            line = (
                f"{unit} [{int(done)}/{int(total)}] {session} · {turn} · calls {calls} · "
                f"elapsed {_clock(elapsed)} · ETA {_clock(eta)}"
            )
            self.console.print(line, markup=False, highlight=False, soft_wrap=True)


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
