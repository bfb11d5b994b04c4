"""Usage errors from the real entry point: one line on stderr, exit 2, no panel or traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _memeval(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memeval", *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["run", "combined", "--repeat", "0"], "'--repeat'"),
        (["run", "combined", "--frobnicate"], "No such option: --frobnicate"),
        (["frob"], "No such command 'frob'"),
        (["scenarios", "show"], "Missing argument"),
        (["report"], "Missing argument"),
    ],
)
def test_usage_error_is_one_line_exit_2(args: list[str], says: str) -> None:
    done = _memeval(*args)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: ") and says in lines[0]
    assert "--help" in lines[0]  # where to look for what would be valid
    assert done.stdout == ""


def test_help_exits_0_and_no_arguments_shows_help() -> None:
    assert _memeval("--help").returncode == 0
    bare = _memeval()
    assert bare.returncode == 2 and "Usage" in bare.stdout + bare.stderr


def test_library_error_keeps_its_one_line() -> None:
    done = _memeval("run", "no-such-scenario")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: unknown scenario 'no-such-scenario' (valid: agent-traces, book-summary, "
        "combined, compaction, legal-rag; or a path to a .yaml file)"
    ]
