"""Shared helpers for the benchmark scripts: the machine line, plain tables, running
`memeval run` as a user would, throw-away cache directories and reading a saved run."""

from __future__ import annotations

import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python benchmarks/x.py` from a fresh clone
    sys.path.insert(0, str(ROOT))

from memeval.models.registry import cpu_name  # noqa: E402
from memeval.models.weights import cache_dir  # noqa: E402
from memeval.rundir.record import TurnRecord, read_run  # noqa: E402
from memeval.rundir.saved import SavedRun  # noqa: E402

ROLE_ORDER = ("agent", "summarizer", "updater", "safety", "compactor", "judge")


def machine() -> str:
    """CPU model, cores and the load average right now (other jobs share this machine)."""
    cpu = cpu_name()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, load {load}"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain text table: first column left-aligned, the others right-aligned."""
    cells = [[_cell(v) for v in row] for row in [headers, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        parts = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        lines.append("  ".join(parts).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    return str(value)


def pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def p50(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else 0.0


def p95(xs: Sequence[float]) -> float:
    if not xs:
        return 0.0
    ordered = sorted(xs)
    return ordered[round(0.95 * (len(ordered) - 1))]


@contextmanager
def fresh_cache_dir(keep: Path | None = None) -> Iterator[Path]:
    """An empty MEMEVAL_CACHE_DIR (so no response is cached) that still sees the joined
    weights of the usual cache, so the embedded model is not re-joined from its chunks."""
    with tempfile.TemporaryDirectory(prefix="memeval-bench-") as tmp:
        root = keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        models = cache_dir()  # the usual cache's joined weights
        if models.is_dir() and not (root / models.name).exists():
            (root / models.name).symlink_to(models, target_is_directory=True)
        yield root


@dataclass
class CliRun:
    wall_s: float
    cpu_s: float  # user + system CPU of the child: less sensitive than wall to other jobs
    run_dir: Path
    returncode: int
    stderr: str


def run_cli(args: Sequence[str], out: Path, env: dict[str, str] | None = None) -> CliRun:
    """`python -m memeval run ARGS --out OUT` in a child process, timed from spawn to exit."""
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.iterdir())
    cmd = [sys.executable, "-m", "memeval", "run", *args, "--out", str(out), "--no-progress"]
    before_cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(
        cmd, cwd=ROOT, env={**os.environ, **(env or {})}, capture_output=True, text=True
    )
    wall = time.perf_counter() - started
    after_cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after_cpu.ru_utime - before_cpu.ru_utime) + (after_cpu.ru_stime - before_cpu.ru_stime)
    new = sorted(set(out.iterdir()) - before)
    if proc.returncode not in (0, 1) or not new:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return CliRun(wall, cpu, new[-1], proc.returncode, proc.stderr)


@dataclass
class Call:
    """One model call of a saved run (the judge's too), flattened for tables."""

    role: str
    turn: str
    prompt_tokens: int
    completion_tokens: int
    cached_prompt_tokens: int
    latency_s: float
    cached: bool
    error: str | None


def run_calls(run_dir: Path) -> list[Call]:
    """Every call of a run: turn calls from events.jsonl, judge calls from verdicts.json."""
    run = SavedRun.open(run_dir)
    calls = [
        Call(
            role=c.role,
            turn=r.turn,
            prompt_tokens=c.prompt_tokens,
            completion_tokens=c.completion_tokens,
            cached_prompt_tokens=c.cached_prompt_tokens,
            latency_s=c.latency_s,
            cached=c.cached,
            error=c.error,
        )
        for r in run.events
        for c in r.calls
    ]
    if run.results is None:  # an ungraded run has no verdicts.json
        return calls
    for t in run.results.turns:
        for judge in (t.judge, t.write_judge):
            if judge is not None:
                calls.append(
                    Call(
                        "judge",
                        t.turn,
                        judge.prompt_tokens,
                        judge.completion_tokens,
                        judge.cached_prompt_tokens,
                        judge.latency_s,
                        bool(judge.cached),
                        judge.error,
                    )
                )
    return calls


def run_turns(run_dir: Path) -> list[TurnRecord]:
    return SavedRun.open(run_dir).events


def replay_wall(run_dir: Path) -> float:
    """Seconds from run.json's creation to the last turn (the replay, before grading)."""
    from datetime import datetime

    info = read_run(run_dir)
    if not info.finished_at:
        return 0.0
    start = datetime.fromisoformat(info.created_at)
    end = datetime.fromisoformat(info.finished_at)
    return (end - start).total_seconds()
