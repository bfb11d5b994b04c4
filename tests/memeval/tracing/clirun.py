"""`memeval run` as a user runs it: a subprocess, fake models, a private cache directory."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


@dataclass
class Ran:
    code: int
    stdout: str
    stderr: str
    seconds: float
    run_dir: Path | None


def memeval_run(*args: str, out: Path, timeout_s: float = 300) -> Ran:
    env = {**os.environ, "PYTHONPATH": str(REPO), "MEMEVAL_CACHE_DIR": str(out / "cache")}
    env.pop("PHOENIX_COLLECTOR_ENDPOINT", None)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "memeval", "run", *args, "--out", str(out), "--no-progress"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    seconds = time.perf_counter() - started
    runs = [p for p in out.iterdir() if (p / "run.json").is_file()] if out.is_dir() else []
    return Ran(done.returncode, done.stdout, done.stderr, seconds, runs[0] if runs else None)
