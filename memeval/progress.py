"""Live progress for `memeval run`: one bar per scenario repeat, on stderr."""

from __future__ import annotations

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
            disable=not enabled,
            transient=False,
        )
        self._tasks: dict[str, TaskID] = {}

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

    def add_unit(self, unit: str, total_turns: int, done: int) -> None:
        self._tasks[unit] = self._progress.add_task(
            unit, total=total_turns, completed=done, where="", calls=0
        )

    def turn_done(self, unit: str, session: str, turn: str, calls: int) -> None:
        self._progress.update(
            self._tasks[unit], advance=1, where=f"{session} · {turn}", calls=calls
        )
