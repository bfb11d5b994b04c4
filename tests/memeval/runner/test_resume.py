"""A run killed with SIGKILL mid-session and resumed ends with the same events as one that was
never interrupted."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from memeval.rundir.record import read_events, read_run

REPO = Path(__file__).resolve().parents[3]
PLUGIN = "tests.memeval.runner.slow_memory:factory"


def memeval(*args: str, out: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "MEMEVAL_CACHE_DIR": str(out / "cache")}
    return subprocess.Popen(
        [sys.executable, "-m", "memeval", "run", *args, "--out", str(out), "--no-progress"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def comparable(run_dir: Path) -> list[dict[str, Any]]:
    rows = []
    for e in sorted(read_events(run_dir), key=lambda e: (e.scenario, e.repeat, e.index)):
        rows.append(
            {
                "key": (e.scenario, e.repeat, e.index, e.session, e.turn),
                "messages": e.messages,
                "answer": e.answer,
                "tool_calls": [c.model_dump() for c in e.tool_calls],
                "memory_context": e.memory_context,
                "status": e.update.status,
                "ops": e.update.ops,
                "file_before": e.update.file_before,
                "snapshot": (run_dir / e.snapshot).read_text(),
            }
        )
    return rows


def only_run(out: Path) -> Path:
    (run_dir,) = [p for p in out.iterdir() if (p / "run.json").is_file()]
    return run_dir


def test_sigkill_then_resume_matches_an_uninterrupted_run(tmp_path: Path) -> None:
    args = ("book-summary", "--memory", PLUGIN, "--model", "fake", "--no-judge")
    whole = memeval(*args, out=tmp_path / "whole")
    assert whole.wait(timeout=300) == 0, whole.stderr.read() if whole.stderr else ""
    expected = comparable(only_run(tmp_path / "whole"))

    killed = memeval(*args, out=tmp_path / "killed")
    deadline = time.monotonic() + 120
    run_dir: Path | None = None
    while time.monotonic() < deadline:
        dirs = list((tmp_path / "killed").glob("*/events.jsonl"))
        if dirs and sum(1 for _ in dirs[0].open()) >= 7:  # mid-session 2 of book-summary
            run_dir = dirs[0].parent
            break
        time.sleep(0.02)
    assert run_dir is not None, "the run never got going"
    time.sleep(0.1)  # inside a turn: its write is stored, its journal line is not
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=30)
    partial = len(read_events(run_dir))
    assert 7 <= partial < len(expected)
    assert read_run(run_dir).status == "running"

    resumed = memeval("--resume", str(run_dir), out=tmp_path / "killed")
    assert resumed.wait(timeout=300) == 0, resumed.stderr.read() if resumed.stderr else ""
    assert read_run(run_dir).status == "complete"
    assert comparable(run_dir) == expected  # nothing lost, nothing repeated


def test_resuming_a_complete_run_is_a_one_line_error(tmp_path: Path) -> None:
    done = memeval("book-summary", "--model", "fake", "--no-judge", out=tmp_path)
    assert done.wait(timeout=300) == 0
    again = memeval("--resume", str(only_run(tmp_path)), out=tmp_path)
    assert again.wait(timeout=60) == 2
    err = again.stderr.read().decode() if again.stderr else ""
    assert err.strip().count("\n") == 0 and "already complete" in err


def test_sigkill_under_async_memory_then_resume_keeps_one_chain(tmp_path: Path) -> None:
    """Killed while several updates were in flight: the journal is a prefix of the turns, and
    the resumed run continues from its last line, each update reading what the one before
    left (the store is rewound past any write whose journal line was lost)."""
    args = ("book-summary", "--memory", PLUGIN, "--model", "fake", "--no-judge")
    killed = memeval(*args, "--async-memory", out=tmp_path)
    deadline = time.monotonic() + 120
    run_dir: Path | None = None
    while time.monotonic() < deadline:
        dirs = list(tmp_path.glob("*/events.jsonl"))
        if dirs and sum(1 for _ in dirs[0].open()) >= 7:
            run_dir = dirs[0].parent
            break
        time.sleep(0.02)
    assert run_dir is not None, "the run never got going"
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=30)
    partial = read_events(run_dir)
    assert [e.index for e in partial] == list(range(len(partial)))  # a prefix, in order

    resumed = memeval("--resume", str(run_dir), out=tmp_path)
    assert resumed.wait(timeout=300) == 0, resumed.stderr.read() if resumed.stderr else ""
    info = read_run(run_dir)
    assert info.status == "complete" and info.config.async_memory
    events = read_events(run_dir)
    total = len(info.scenarios["book-summary"].turn_ids())
    assert [e.index for e in events] == list(range(total))  # each turn journaled once
    for before, after in itertools.pairwise(events):
        assert after.update.file_before == (run_dir / before.snapshot).read_text()
    written = sum(e.update.status == "written" for e in events)
    final = (run_dir / events[-1].snapshot).read_text()
    assert final.count("- note ") == written > len(partial)
