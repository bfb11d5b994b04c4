"""Stale reads under `--async-memory`, derived from the saved run alone.

Each turn that read memory records `pending_at_read`: the earlier turns of its unit whose
memory update had not landed when the read began (one landing while the read is under way
counts as in flight; back-to-back, the previous update only starts once the next read has
begun, and needs several store and model round trips to land). An in-flight update that
changed memory is one the read missed, and a read that missed one is a stale read: the agent
was served memory lacking an update still in flight. Whether an update changed memory comes
from its own file before and after (the reference pipeline records both, read and written
under the key's lock), or, for a system whose update report carries no file, from the
snapshots around it (updates of one unit land in turn order). For a system that serves a
selection of what it stores (top-k retrieval), a stale read means the store it read was
behind; whether the missed change would have been selected cannot be known after the fact.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memeval.rundir.record import TurnRecord
from memeval.rundir.saved import SavedRun

TurnKey = tuple[str, int, str]  # (scenario, repeat, turn)


@dataclass(frozen=True)
class Freshness:
    """How current the memory was that one turn's agent was served."""

    read: bool  # the turn read memory (eval turns do; seed turns replay a transcript)
    in_flight: tuple[str, ...] = ()  # earlier turns whose update had not landed at the read
    missed: tuple[str, ...] = ()  # those of them that changed memory

    @property
    def stale(self) -> bool:
        return bool(self.missed)


def unit_freshness(
    records: Sequence[TurnRecord], snapshot: Callable[[TurnRecord], str]
) -> list[Freshness]:
    """Freshness of each turn of one unit (its records in index order). Snapshots are read
    only for updates some read was waiting on, and only when the update has no files."""
    position = {record.turn: k for k, record in enumerate(records)}

    def changed(turn: str) -> bool:
        if turn not in position:  # never journaled: cannot be judged, so not called fresh
            return True
        k = position[turn]
        update = records[k].update
        if update.file_before or update.file_after:
            return update.file_before != update.file_after
        return snapshot(records[k]) != (snapshot(records[k - 1]) if k else "")

    found = []
    for record in records:
        pending = tuple(record.pending_at_read)
        missed = tuple(t for t in pending if changed(t))
        found.append(Freshness(record.session_kind == "eval", pending, missed))
    return found


def run_freshness(run: SavedRun) -> dict[TurnKey, Freshness]:
    """Freshness of every turn of the run."""
    found: dict[TurnKey, Freshness] = {}
    for records in run.units().values():
        for record, fresh in zip(records, unit_freshness(records, run.shown_snapshot), strict=True):
            found[(record.scenario, record.repeat, record.turn)] = fresh
    return found
