"""Progress off a terminal: one plain line per turn (CI logs are never silent for minutes)."""

from __future__ import annotations

import io

from rich.console import Console

from memeval.progress import RunProgress


def _progress(terminal: bool, enabled: bool = True) -> tuple[RunProgress, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, width=120)
    return RunProgress(enabled=enabled, console=console), out


def test_plain_lines_when_not_a_terminal() -> None:
    progress, out = _progress(terminal=False)
    with progress:
        progress.add_unit("combined", total_turns=4, done=1)
        progress.turn_done("combined", "legal-rag/s1", "legal-rag/s1t2", calls=7)
        progress.turn_done("combined", "legal-rag/s1", "legal-rag/s1t3", calls=12)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("combined [2/4] legal-rag/s1 · legal-rag/s1t2 · calls 7 · elapsed ")
    assert lines[1].startswith("combined [3/4] legal-rag/s1 · legal-rag/s1t3 · calls 12 ")
    assert "ETA " in lines[1]


def test_no_plain_lines_on_a_terminal_or_when_disabled() -> None:
    live, live_out = _progress(terminal=True)
    assert live.live
    quiet, quiet_out = _progress(terminal=False, enabled=False)
    for progress in (live, quiet):
        with progress:
            progress.add_unit("book-summary", total_turns=2, done=0)
            progress.turn_done("book-summary", "s1", "s1t1", calls=3)
    assert "[1/2]" not in live_out.getvalue()  # the bar shows 1/2 as "1/2", never a plain line
    assert quiet_out.getvalue() == ""
