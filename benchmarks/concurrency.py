"""Concurrency: the replay with a model that takes a fixed time per call (200 ms by default),
one run vs `--repeat 5 --concurrency 5` vs three scenarios at once, side by side.

The stand-in is `fake` plus a sleep, passed to the runner as ready models per role (the
library's `chat_models=`), so all the waiting is model latency and everything else is the
harness. Ideal concurrency keeps the wall of N parallel units at the wall of the longest one.

    .venv/bin/python benchmarks/concurrency.py [--latency 0.2] [--rounds 1]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from _common import machine, run_calls, run_turns, table

from memeval.models.base import ChatResponse, Message
from memeval.models.fake import FakeModel
from memeval.models.spec import parse_spec
from memeval.runner import RunOptions, execute

PIPELINE = ("agent", "summarizer", "updater", "safety", "compactor")
THREE = ["book-summary", "legal-rag", "agent-traces"]


class SlowFake(FakeModel):
    """`fake`'s answers after a fixed sleep: a model with constant latency and no CPU use."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        schema: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> ChatResponse:
        started = time.perf_counter()
        await asyncio.sleep(self.latency_s)
        response = await super().chat(messages, tools=tools, schema=schema)
        response.latency_s = time.perf_counter() - started
        return response


def replay(targets: list[str], repeat: int, concurrency: int, latency: float, out: Path) -> dict:
    """One library run (turns only: grading does not depend on --concurrency)."""
    model = SlowFake(latency)
    options = RunOptions(
        targets=targets,
        model=parse_spec("fake"),
        repeat=repeat,
        concurrency=concurrency,
        out=out,
        chat_models={role: model for role in PIPELINE},
        progress=False,
    )
    started = time.perf_counter()
    outcome = asyncio.run(execute(options))
    wall = time.perf_counter() - started
    calls = run_calls(outcome.run_dir)
    return {
        "wall": wall,
        "longest": _longest_unit(outcome.run_dir),
        "turns": len(run_turns(outcome.run_dir)),
        "calls": len(calls),
        "model_s": sum(c.latency_s for c in calls),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per model call")
    parser.add_argument("--rounds", type=int, default=1, help="repeat each case, take medians")
    args = parser.parse_args()
    cases = [
        ("combined, one run", ["combined"], 1, 1),
        ("combined --repeat 5 --concurrency 5", ["combined"], 5, 5),
        ("3 scenarios, one at a time", THREE, 1, 1),
        ("3 scenarios --concurrency 3", THREE, 1, 3),
    ]
    started = time.perf_counter()
    samples: dict[str, list[dict]] = {label: [] for label, *_ in cases}
    with tempfile.TemporaryDirectory() as out:
        for _ in range(args.rounds):  # interleaved, so a burst of load hits every case alike
            for label, targets, repeat, concurrency in cases:
                samples[label].append(replay(targets, repeat, concurrency, args.latency, Path(out)))
    med = {label: _median(runs) for label, runs in samples.items()}
    one = med["combined, one run"]["wall"]
    serial = {
        "combined, one run": one,
        "combined --repeat 5 --concurrency 5": 5 * one,
        "3 scenarios, one at a time": med["3 scenarios, one at a time"]["wall"],
        "3 scenarios --concurrency 3": med["3 scenarios, one at a time"]["wall"],
    }
    rows = []
    for label, *_ in cases:
        m = med[label]
        rows.append(
            [
                label,
                m["turns"],
                m["calls"],
                f"{m['wall']:.1f}",
                f"{m['longest']:.1f}",
                f"{m['wall'] / one:.2f}",
                f"{serial[label] / m['wall']:.2f}x",
                f"{m['calls'] / m['wall']:.1f}",
            ]
        )
    print(f"machine: {machine()}")
    print(f"model stand-in: fake + {args.latency * 1000:.0f} ms per call; turns only (no grading)")
    headers = ["case", "turns", "calls", "wall s", "slowest unit s", "vs one run"]
    headers += ["speed-up vs serial", "calls/s"]
    print(table(headers, rows))
    print("serial = the same units one after another (5 x one run for --repeat 5);")
    print("slowest unit = its first turn's start to its last turn's end (the floor for the wall)")
    print(f"(benchmark took {time.perf_counter() - started:.0f}s, {args.rounds} round(s))")


def _longest_unit(run_dir: Path) -> float:
    """Seconds from the first turn's start to the last turn's end of the slowest unit."""
    spans: dict[tuple[str, int], list[datetime]] = defaultdict(list)
    for r in run_turns(run_dir):
        spans[(r.scenario, r.repeat)] += [_at(r.started_at), _at(r.finished_at)]
    return max((max(ts) - min(ts)).total_seconds() for ts in spans.values())


def _at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp)


def _median(runs: list[dict]) -> dict:
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


if __name__ == "__main__":
    main()
