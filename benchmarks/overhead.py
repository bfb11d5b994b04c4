"""Harness overhead: `memeval run combined --model fake` (instant answers), file memory on SQLite
and on PostgreSQL side by side — total wall, where it goes, per-turn harness time and the share
of time spent outside the model.

`fake` proposes no edits, so the memory file is read every turn but never rewritten; the
store's write cost per turn is measured by benchmarks/pipeline_overhead.py. Cases run
interleaved, `--rounds` times, and medians are shown (the machine is shared).

    .venv/bin/python benchmarks/overhead.py [--rounds 3] [--dsn postgresql://...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from _common import machine, p50, p95, pct, replay_wall, run_cli, run_turns, table

from memeval.rundir.record import read_run

DEFAULT_DSN = os.environ.get("MEMEVAL_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")


def one_run(store: str | None, out: Path) -> dict[str, float]:
    spawned = datetime.now(UTC)
    args = ["combined", "--model", "fake", *(["--store", store] if store else [])]
    run = run_cli(args, out / "runs", {"MEMEVAL_CACHE_DIR": str(out / "cache")})
    info = read_run(run.run_dir)
    created = datetime.fromisoformat(info.created_at)
    replay = replay_wall(run.run_dir)
    turns = run_turns(run.run_dir)
    harness = [r.timings["turn_s"] - sum(c.latency_s for c in r.calls) for r in turns]
    model_s = sum(c.latency_s for r in turns for c in r.calls)
    startup = (created - spawned).total_seconds()
    return {
        "wall": run.wall_s,
        "startup": startup,
        "replay": replay,
        "finish": run.wall_s - startup - replay,
        "turns": len(turns),
        "turn_p50_ms": 1000 * p50(harness),
        "turn_p95_ms": 1000 * p95(harness),
        "model_s": model_s,
    }


def pg_available(dsn: str) -> str | None:
    try:
        with psycopg.connect(dsn, connect_timeout=3):
            return None
    except Exception as exc:
        return f"unavailable ({type(exc).__name__})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dsn", default=DEFAULT_DSN)
    args = parser.parse_args()
    started = time.perf_counter()
    cases: dict[str, str | None] = {"SQLite": None}
    missing = pg_available(args.dsn)
    if missing is None:
        cases["PostgreSQL"] = args.dsn
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in cases}
    with tempfile.TemporaryDirectory() as out:
        for _ in range(args.rounds):
            for name, store in cases.items():
                samples[name].append(one_run(store, Path(out)))
    med = {
        name: {k: statistics.median(s[k] for s in runs) for k in runs[0]}
        for name, runs in samples.items()
    }
    rows = [
        ["wall, `memeval run` (s)", *[f"{m['wall']:.2f}" for m in med.values()]],
        ["  start-up: imports, plan (s)", *[f"{m['startup']:.2f}" for m in med.values()]],
        ["  replay of the turns (s)", *[f"{m['replay']:.2f}" for m in med.values()]],
        ["  grade, tables, report (s)", *[f"{m['finish']:.2f}" for m in med.values()]],
        ["turns", *[f"{m['turns']:.0f}" for m in med.values()]],
        [
            "harness per turn p50 / p95 (ms)",
            *[f"{m['turn_p50_ms']:.1f} / {m['turn_p95_ms']:.1f}" for m in med.values()],
        ],
        ["time inside the model (s)", *[f"{m['model_s']:.3f}" for m in med.values()]],
        [
            "share of wall outside the model",
            *[pct(m["wall"] - m["model_s"], m["wall"]) for m in med.values()],
        ],
    ]
    headers = ["memeval run combined --model fake", *med]
    if missing is not None:
        headers.append("PostgreSQL")
        rows = [[*row, missing if i == 0 else ""] for i, row in enumerate(rows)]
    print(f"machine: {machine()}")
    print(table(headers, rows))
    print(f"medians of {args.rounds} interleaved rounds; harness per turn = turn time minus the")
    print("model calls inside it (agent, memory update, snapshot, journal line, tracing no-op)")
    print(f"(benchmark took {time.perf_counter() - started:.0f}s)")


if __name__ == "__main__":
    main()
