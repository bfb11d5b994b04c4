"""A run directory opened once and handed to every consumer (grading, tables, report,
annotations, gate, compare), instead of each re-reading the files.

run.json, events.jsonl and verdicts.json are read eagerly when the run is opened: every
consumer needs them, and a broken file should fail before any work, as one line. Snapshots
are read lazily and kept: gate, compare and annotations never need them, while grading and
the report (both in one `memeval run`) share a single read of each file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from memeval.errors import RunDirError
from memeval.rundir.record import RunInfo, TurnRecord, read_events, read_run
from memeval.rundir.results import VERDICTS_FILE, RunResults, load_results
from memeval.scenario.schema import ResolvedScenario

UnitKey = tuple[str, int]  # (scenario, repeat)


@dataclass
class SavedRun:
    path: Path
    info: RunInfo
    events: list[TurnRecord]
    results: RunResults | None = None  # verdicts.json; None while the run is ungraded
    _snapshots: dict[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, path: Path) -> SavedRun:
        """Read a run directory; a missing or malformed file is a one-line RunDirError."""
        path = Path(path)
        info = read_run(path)
        events = read_events(path)
        results = load_results(path) if (path / VERDICTS_FILE).is_file() else None
        return cls(path=path, info=info, events=events, results=results)

    @property
    def run_id(self) -> str:
        return self.info.run_id

    def graded(self) -> RunResults:
        """The saved verdicts; an ungraded run is a one-line RunDirError saying what to do."""
        if self.results is None:
            raise RunDirError(
                f"{self.path}: no {VERDICTS_FILE} (the run is not graded); "
                f"run `memeval grade {self.path}`"
            )
        return self.results

    def units(self) -> dict[UnitKey, list[TurnRecord]]:
        """Turns per (scenario, repeat) by index, in file order of first appearance; when a
        turn was journaled twice (a resumed run), the later record wins."""
        by_unit: dict[UnitKey, dict[int, TurnRecord]] = {}
        for record in self.events:
            by_unit.setdefault((record.scenario, record.repeat), {})[record.index] = record
        return {key: [turns[i] for i in sorted(turns)] for key, turns in by_unit.items()}

    def planned_units(self) -> list[list[TurnRecord]]:
        """The units in plan order (run.json `units`), any unplanned ones after, sorted."""
        units = self.units()
        planned = [(u.scenario, u.repeat) for u in self.info.units]
        order = [k for k in planned if k in units] + sorted(k for k in units if k not in planned)
        return [units[k] for k in order]

    def scenario(self, name: str) -> ResolvedScenario:
        found = self.info.scenarios.get(name)
        if found is None:
            raise RunDirError(f"{self.path}: run.json has no scenario {name!r} for its turns")
        return found

    def snapshot(self, record: TurnRecord) -> str:
        """The memory after the turn (the update's `file_after` when no snapshot was saved).
        The path must stay inside the run directory and the file must exist."""
        if not record.snapshot:
            return record.update.file_after
        if record.snapshot not in self._snapshots:
            root = self.path.resolve()
            path = (root / record.snapshot).resolve()
            if not path.is_relative_to(root):
                raise RunDirError(
                    f"{self.path}: turn {record.turn} names a snapshot outside the run"
                )
            if not path.is_file():
                raise RunDirError(
                    f"{self.path}: snapshot {record.snapshot} of turn {record.turn} is missing"
                )
            self._snapshots[record.snapshot] = path.read_text(encoding="utf-8")
        return self._snapshots[record.snapshot]

    def shown_snapshot(self, record: TurnRecord) -> str:
        """For display: the snapshot, or the update's `file_after` when it cannot be read."""
        try:
            return self.snapshot(record)
        except RunDirError:
            return record.update.file_after
