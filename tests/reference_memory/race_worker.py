"""One OS process of the cross-process race tests: `count` updates through FileMemory.update()
on one key, each appending a unique marker; prints a JSON summary of what it saw.

Run as `python -m tests.reference_memory.race_worker ...` from the repository root.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

from reference_memory import FileMemory, PostgresStore, SQLiteStore
from reference_memory.store.base import Store
from reference_memory.testing import ALLOW, Request, add, ops, roles, turn

_LOCKS = """SELECT count(*) FILTER (WHERE granted), count(*) FILTER (WHERE NOT granted)
    FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1
    AND classid::bigint = %s AND objid::bigint = %s
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"""


def lock_ids(user: str, space: str) -> tuple[int, int]:
    """How pg_locks shows the advisory lock of a key: (classid, objid) = high, low 32 bits."""
    unsigned = PostgresStore.lock_key(user, space) & 0xFFFFFFFFFFFFFFFF
    return unsigned >> 32, unsigned & 0xFFFFFFFF


class Observer:
    """Looks at pg_locks from its own connection while this worker holds its key's lock."""

    def __init__(self, dsn: str, key: tuple[str, str], meet: tuple[str, str] | None) -> None:
        import psycopg

        self.conn = psycopg.connect(dsn, autocommit=True)
        self.key, self.meet = lock_ids(*key), lock_ids(*meet) if meet else None
        self.waiting_seen = 0  # observations of another process queued on our key
        self.met = False  # the other key's lock was held at the same time as ours

    def look(self) -> None:
        held, waiting = self.conn.execute(_LOCKS, self.key).fetchone()  # type: ignore[misc]
        assert held == 1, f"our own lock is not held ({held})"
        self.waiting_seen += waiting > 0
        if self.meet and not self.met:
            deadline = time.monotonic() + 60  # bound only; meeting needs true parallelism
            while time.monotonic() < deadline:
                other, _ = self.conn.execute(_LOCKS, self.meet).fetchone()  # type: ignore[misc]
                if other:
                    self.met = True
                    return
                time.sleep(0.01)


def barrier(directory: Path, tag: str, peers: int) -> None:
    (directory / tag).touch()
    deadline = time.monotonic() + 60
    while len(list(directory.iterdir())) < peers and time.monotonic() < deadline:
        time.sleep(0.005)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    store: Store
    if args.backend == "postgres":
        store = PostgresStore(args.dsn, schema=args.schema)
    else:
        store = SQLiteStore(args.path)
    meet = tuple(args.meet.split("/", 1)) if args.meet else None
    observer = (
        Observer(args.dsn, (args.user, args.space), meet) if args.backend == "postgres" else None
    )

    def marker(i: int):
        async def answer(request: Request) -> str:
            if observer:
                observer.look()
            await asyncio.sleep(0.002)  # widen the read-modify-write window
            return ops(add("## Assets", f"- {args.tag}-{i:03d}"))

        return answer

    n = args.count
    models = roles(
        summarizer=[f"The user said marker {args.tag}-{i:03d}." for i in range(n)],
        updater=[marker(i) for i in range(n)],
        safety=[ALLOW] * n,
    )
    memory = FileMemory(models, store)
    barrier(Path(args.barrier), args.tag, args.peers)
    statuses, errors = [], []
    for _ in range(n):
        report = await memory.update(args.user, args.space, turn())
        statuses.append(report.status)
        errors.extend(report.errors)
    memory.close()
    return {
        "statuses": statuses,
        "errors": errors,
        "waiting_seen": observer.waiting_seen if observer else None,
        "met": observer.met if observer else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", choices=["postgres", "sqlite"], required=True)
    parser.add_argument("--dsn", default="")
    parser.add_argument("--schema", default="public")
    parser.add_argument("--path", default="")
    parser.add_argument("--user", required=True)
    parser.add_argument("--space", required=True)
    parser.add_argument("--tag", required=True)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--barrier", required=True)
    parser.add_argument("--peers", type=int, default=2)
    parser.add_argument(
        "--meet", default="", help="user/space whose lock must be seen held with ours"
    )
    print(json.dumps(asyncio.run(run(parser.parse_args()))))


if __name__ == "__main__":
    main()
