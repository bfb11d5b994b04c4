"""Fixtures for report tests: graded hand-made runs and a real headless Chromium."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memeval.models.scripted import ScriptedModel
from tests.conftest import require_service
from tests.memeval.rundirs import build_sample_run, grade_and_save

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def graded(run_dir: Path, judge_reason: str = "cites 0.648 against the 0.90 target") -> Path:
    """Grade a run with a scripted judge that passes the one question its checks pass."""
    answer = json.dumps({"verdict": "pass", "reason": judge_reason})
    asyncio.run(grade_and_save(run_dir, ScriptedModel([answer], name="scripted:judge")))
    return run_dir


@pytest.fixture
def sample_run(tmp_path: Path) -> Path:
    return graded(build_sample_run(tmp_path / "run"))


def edit_events(run_dir: Path, turn: str, **changes: Any) -> None:
    """Rewrite fields of one turn's journal line (a hand-made variation of a run)."""
    path = run_dir / "events.jsonl"
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["turn"] == turn:
            record.update(changes)
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """Debian's Chromium driven by Playwright (never a downloaded browser).

    A context manager, not a fixture: Playwright's sync API keeps an event loop running
    while it is open, so a test closes the browser before it calls code that runs its own.
    """
    require_service("Chromium", shutil.which(CHROMIUM) is not None, f"{CHROMIUM} not found")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
