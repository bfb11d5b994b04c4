"""Two replicas on one PostgreSQL store: two `memeval run --async-memory` processes replay
interleaved turns of the same user and space, every update racing the next turn and the other
process, and no update is lost: the version history is strictly serial (each version is the
one before plus exactly one marker) and holds every turn's marker."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from memeval.rundir.record import read_events, read_run
from reference_memory import SKELETON, PostgresStore
from tests.memeval.runner.replica_memory import MARKER
from tests.reference_memory.test_race import assert_serial_history

ROOT = Path(__file__).resolve().parents[3]
PLUGIN = "tests.memeval.runner.replica_memory:factory"
SEED, EVAL = 8, 3  # turns per replica: a seed session, then an eval session


def scenario(tag: str, space: str) -> str:
    seeds = "".join(
        f'      - id: t{i}\n        user: "Note marker {tag}-{i:03d}."\n'
        '        transcript: [{assistant: "Noted."}]\n'
        "        expect: {note: Records the marker.}\n"
        for i in range(SEED)
    )
    evals = "".join(
        f'      - id: q{i}\n        user: "Also marker {tag}-{SEED + i:03d}. What do you know?"\n'
        "        question: {type: memory-dependent, criterion: Lists the markers.}\n"
        for i in range(EVAL)
    )
    return (
        f"version: 1\nname: replica-{tag.lower()}\nuser: dana\nspace: {space}\nsessions:\n"
        f"  - id: s1\n    kind: seed\n    turns:\n{seeds}"
        f"  - id: s2\n    kind: eval\n    turns:\n{evals}"
    )


@pytest.fixture
def pg_schema(pg_dsn: str) -> Iterator[str]:
    name = f"replicas_{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.mark.postgres
@pytest.mark.slow
def test_two_replicas_lose_no_update(pg_dsn: str, pg_schema: str, tmp_path: Path) -> None:
    space = f"replicas-{uuid.uuid4().hex[:8]}"
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    env = os.environ | {"REPLICA_SCHEMA": pg_schema, "REPLICA_BARRIER": str(barrier)}
    workers = []
    for tag in ("A", "B"):
        path = tmp_path / f"replica-{tag}.yaml"
        path.write_text(scenario(tag, space), encoding="utf-8")
        args = [sys.executable, "-m", "memeval", "run", str(path), "--memory", PLUGIN]
        args += ["--model", "fake", "--store", pg_dsn, "--async-memory", "--no-judge"]
        args += ["--no-cache", "--no-progress", "--out", str(tmp_path / f"out-{tag}")]
        workers.append(
            subprocess.Popen(
                args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
        )
    for worker in workers:
        out, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, (out + err)[-3000:]

    markers = {f"- {tag}-{i:03d}" for tag in "AB" for i in range(SEED + EVAL)}
    store = PostgresStore(pg_dsn, schema=pg_schema)
    try:
        versions = store.versions("dana", space)
        final = store.get("dana", space)
    finally:
        store.close()
    assert len(versions) == len(markers) and final == versions[-1]
    assert_serial_history(versions, markers)

    # the replicas' updates really interleaved on the key (not one run after the other)
    owners = "".join(added(before, after)[2] for before, after in itertools.pairwise(versions))
    owners = added(SKELETON, versions[0])[2] + owners
    switches = sum(a != b for a, b in itertools.pairwise(owners))
    assert switches >= 2, f"the replicas took turns only {switches} time(s): {owners}"

    # each replica journaled every turn under async memory, each update adding its own marker
    for tag in "AB":
        (run_dir,) = list((tmp_path / f"out-{tag}").iterdir())
        assert read_run(run_dir).config.async_memory
        events = read_events(run_dir)
        assert len(events) == SEED + EVAL
        for event in events:
            assert event.update.status == "written", event.update.errors
            marker = MARKER.search(event.user_message)
            assert marker is not None
            assert added(event.update.file_before, event.update.file_after) == f"- {marker[1]}"


def added(before: str, after: str) -> str:
    """The one line `after` has that `before` has not."""
    (line,) = set(after.splitlines()) - set(before.splitlines())
    return line
