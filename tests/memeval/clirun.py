"""memeval as a user runs it: a subprocess of this checkout with a private response cache."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def memeval_cli(
    *args: str,
    cache: Path,
    env: Mapping[str, str | None] | None = None,
    timeout_s: float = 300,
) -> subprocess.CompletedProcess[str]:
    """`python -m memeval ARGS` from the repository; `env` adds variables (None removes one)."""
    merged = {**os.environ, "PYTHONPATH": str(REPO), "MEMEVAL_CACHE_DIR": str(cache)}
    for key, value in (env or {}).items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return subprocess.run(
        [sys.executable, "-m", "memeval", *args],
        cwd=REPO,
        env=merged,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


@dataclass
class Ran:
    code: int
    stdout: str
    stderr: str
    seconds: float
    run_dir: Path | None


def memeval_run(*args: str, out: Path, timeout_s: float = 300) -> Ran:
    """`memeval run ARGS --out OUT` (not traced unless asked), with its run directory."""
    started = time.perf_counter()
    done = memeval_cli(
        "run", *args, "--out", str(out), "--no-progress",
        cache=out / "cache",
        env={"PHOENIX_COLLECTOR_ENDPOINT": None},
        timeout_s=timeout_s,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    runs = [p for p in out.iterdir() if (p / "run.json").is_file()] if out.is_dir() else []
    return Ran(done.returncode, done.stdout, done.stderr, seconds, runs[0] if runs else None)
