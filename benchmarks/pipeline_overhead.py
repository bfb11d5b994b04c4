"""The reference pipeline's own overhead per turn, SQLite vs PostgreSQL, side by side.

An instant scripted model answers every role at once, so what is measured is the pipeline
itself: locks, store reads and writes, prompt rendering, JSON parsing, edit application and
bookkeeping. Overhead = the update's total time minus the time spent inside model calls.

    .venv/bin/python benchmarks/pipeline_overhead.py [--turns 300] [--dsn postgresql://...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import psycopg

from reference_memory import Completion, FileMemory, PostgresStore, SQLiteStore, Status, Turn
from reference_memory.store.base import Store

DEFAULT_DSN = os.environ.get("MEMEVAL_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
TURN = Turn(
    messages=[
        {"role": "user", "content": "Datasets should always have exactly 70 rows."},
        {"role": "assistant", "content": "Noted, I will keep datasets at 70 rows."},
    ]
)


class InstantModel:
    """Answers each role immediately: a summary, one `add` op with a fresh line, `allow`."""

    name = "instant"

    def __init__(self) -> None:
        self.turn = 0

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        schema: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        system = str(messages[0]["content"])
        if "summarize one turn" in system:
            text = "The user said datasets must have exactly 70 rows."
        elif "keep an AI assistant's long-term memory" in system:
            self.turn += 1
            op = {"op": "add", "anchor": "## Conventions", "text": f"- fact {self.turn:05d}"}
            text = json.dumps({"ops": [op]})
        else:
            text = json.dumps({"verdict": "allow", "reason": "ordinary fact"})
        return Completion(text=text, model=self.name)


async def measure(store: Store, turns: int, warmup: int) -> dict[str, list[float]]:
    memory = FileMemory(InstantModel(), store)
    samples: dict[str, list[float]] = {"overhead": [], "read": [], "write": [], "lock_wait": []}
    user, space = "bench", f"space-{uuid.uuid4().hex[:8]}"
    for i in range(warmup + turns):
        report = await memory.update(user, space, TURN)
        if report.status != Status.WRITTEN:
            raise RuntimeError(f"turn {i}: {report.status} {report.errors}")
        if i < warmup:
            continue
        model_time = sum(call.latency_s for call in report.calls)
        samples["overhead"].append(report.timings["total"] - model_time)
        for step in ("read", "write", "lock_wait"):
            samples[step].append(report.timings[step])
    return samples


def row(name: str, results: dict[str, dict[str, list[float]] | str]) -> str:
    cells = []
    for value in results.values():
        if isinstance(value, str):
            cells.append(f"{value:>24}")
            continue
        xs = sorted(value[name])
        p50, p95 = statistics.median(xs) * 1000, xs[int(0.95 * (len(xs) - 1))] * 1000
        cells.append(f"{p50:9.2f} / {p95:8.2f} ms ")
    return f"{name:<12}" + "".join(cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--dsn", default=DEFAULT_DSN)
    args = parser.parse_args()

    results: dict[str, dict[str, list[float]] | str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = SQLiteStore(Path(tmp) / "bench.db")
        results["SQLite"] = asyncio.run(measure(sqlite, args.turns, args.warmup))
        sqlite.close()
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    try:
        pg = PostgresStore(args.dsn, schema=schema, connect_timeout_s=3)
    except Exception as exc:
        results["PostgreSQL"] = f"unavailable ({type(exc).__name__})"
    else:
        try:
            results["PostgreSQL"] = asyncio.run(measure(pg, args.turns, args.warmup))
        finally:
            pg.close()
            with psycopg.connect(args.dsn, autocommit=True) as conn:  # drop the throw-away schema
                conn.execute(f'DROP SCHEMA "{schema}" CASCADE')

    print(f"pipeline overhead per turn, instant model, {args.turns} turns (+{args.warmup} warm-up)")
    print(f"{'p50 / p95':<12}" + "".join(f"{name:>24}" for name in results))
    for name in ("overhead", "read", "write", "lock_wait"):
        print(row(name, results))


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"(benchmark took {time.perf_counter() - started:.1f}s)")
