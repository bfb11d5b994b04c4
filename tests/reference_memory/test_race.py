"""Two OS processes updating memory at once through FileMemory.update().

Same key: every marker survives and the version history is strictly serial (each version is
the previous one plus exactly one marker). Different keys: each worker sees, through pg_locks,
the other key's lock held while its own is — they run in parallel — and never sees anyone
queued on its key.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from reference_memory import SKELETON, PostgresStore, SQLiteStore

ROOT = Path(__file__).resolve().parents[2]
N = 100


def assert_serial_history(versions: list[str], markers: set[str]) -> None:
    """Each version = the one before plus exactly one marker line, nothing lost, all markers."""
    previous, seen = SKELETON, set()
    for k, version in enumerate(versions):
        before, after = Counter(previous.splitlines()), Counter(version.splitlines())
        removed, added = before - after, after - before
        assert not removed, f"version {k} lost {sorted(removed)}: an interleaved write"
        assert sum(added.values()) == 1, f"version {k} added {sorted(added)}, not one marker"
        (line,) = added
        assert line in markers and line not in seen, f"version {k} added {line!r}"
        seen.add(line)
        previous = version
    assert seen == markers


def test_the_history_check_catches_a_lost_update() -> None:
    a = SKELETON.replace("## Assets\n", "## Assets\n- A-000\n")
    b_from_skeleton = SKELETON.replace(
        "## Assets\n", "## Assets\n- B-000\n"
    )  # read before a landed
    with pytest.raises(AssertionError, match="lost"):
        assert_serial_history([a, b_from_skeleton], {"- A-000", "- B-000"})


def spawn(tag: str, user: str, space: str, barrier: Path, **options: str) -> subprocess.Popen:
    args = [sys.executable, "-m", "tests.reference_memory.race_worker", "--tag", tag]
    args += ["--user", user, "--space", space, "--count", str(N), "--barrier", str(barrier)]
    for name, value in options.items():
        args += [f"--{name}", value]
    return subprocess.Popen(
        args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def collect(*workers: subprocess.Popen[str]) -> list[dict[str, Any]]:
    results = []
    for worker in workers:
        out, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    for result in results:
        assert result["statuses"] == ["written"] * N, result["errors"][:5]
    return results


def markers(tag: str) -> set[str]:
    return {f"- {tag}-{i:03d}" for i in range(N)}


@pytest.fixture
def pg_schema(pg_dsn: str) -> Iterator[str]:
    name = f"rm_race_{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.mark.postgres
@pytest.mark.slow
def test_postgres_two_processes_same_key(pg_dsn: str, pg_schema: str, tmp_path: Path) -> None:
    common = {"backend": "postgres", "dsn": pg_dsn, "schema": pg_schema}
    results = collect(
        spawn("A", "dana", "acme", tmp_path, **common),
        spawn("B", "dana", "acme", tmp_path, **common),
    )
    store = PostgresStore(pg_dsn, schema=pg_schema)
    versions = store.versions("dana", "acme")
    final = store.get("dana", "acme")
    store.close()
    assert len(versions) == 2 * N and final == versions[-1]
    assert_serial_history(versions, markers("A") | markers("B"))
    # the processes really contended: one was seen queued on the key's lock
    assert sum(r["waiting_seen"] for r in results) > 0


@pytest.mark.postgres
@pytest.mark.slow
def test_postgres_two_processes_different_keys_run_in_parallel(
    pg_dsn: str, pg_schema: str, tmp_path: Path
) -> None:
    common = {"backend": "postgres", "dsn": pg_dsn, "schema": pg_schema}
    results = collect(
        spawn("A", "dana", "space-a", tmp_path, meet="dana/space-b", **common),
        spawn("B", "dana", "space-b", tmp_path, meet="dana/space-a", **common),
    )
    # each saw the other key's lock held while holding its own, and nobody ever queued
    assert [(r["met"], r["waiting_seen"]) for r in results] == [(True, 0), (True, 0)]
    store = PostgresStore(pg_dsn, schema=pg_schema)
    for tag, space in (("A", "space-a"), ("B", "space-b")):
        versions = store.versions("dana", space)
        assert len(versions) == N
        assert_serial_history(versions, markers(tag))
    store.close()


@pytest.mark.slow
def test_sqlite_two_processes_same_key(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    SQLiteStore(path).close()  # create the schema before the race
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    collect(
        spawn("A", "dana", "acme", barrier, backend="sqlite", path=str(path)),
        spawn("B", "dana", "acme", barrier, backend="sqlite", path=str(path)),
    )
    store = SQLiteStore(path)
    versions = store.versions("dana", "acme")
    store.close()
    assert len(versions) == 2 * N
    assert_serial_history(versions, markers("A") | markers("B"))
