"""A run's outcome does not depend on what the response cache held: the real embedded 0.5B
model on every role, run once with an empty cache and once with half of that cache deleted
(so every other call is served from the cache and the rest are evaluated after a skip),
writes byte-identical snapshots and reaches the same verdicts."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memeval.models.weights import cache_dir as weights_dir
from memeval.rundir.record import read_events
from memeval.rundir.results import load_results
from memeval.rundir.saved import SavedRun
from tests.memeval.clirun import memeval_cli

pytestmark = pytest.mark.local_model

REPO = Path(__file__).resolve().parents[3]
MINI = Path(__file__).with_name("mini.yaml")
SPEC = "local:qwen2.5-coder-0.5b"


def run(out: Path, cache: Path) -> Path:
    args = ["run", str(MINI), "--model", SPEC, "--out", str(out), "--no-progress"]
    done = memeval_cli(*args, cache=cache, timeout_s=1500)
    assert done.returncode == 0, done.stderr[-2000:]
    [run_dir] = [p for p in out.iterdir() if p.is_dir()]
    return run_dir


def outcome(run_dir: Path) -> tuple[list[str], list[tuple[str, str | None, str | None]]]:
    """Every snapshot in turn order, and every turn's (turn, write, question) verdict."""
    saved = SavedRun.open(run_dir)
    snapshots = [saved.snapshot(r) for records in saved.units().values() for r in records]
    results = load_results(run_dir)
    verdicts = [
        (
            t.turn,
            t.write.verdict if t.write else None,
            t.question.verdict if t.question else None,
        )
        for t in results.turns
    ]
    return snapshots, verdicts


def test_a_partly_warm_cache_gives_the_same_snapshots_and_verdicts(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    weights_dir().mkdir(parents=True, exist_ok=True)  # on a new machine nothing made it yet
    (cache / "models").symlink_to(weights_dir(), target_is_directory=True)  # no second copy

    fresh = run(tmp_path / "fresh", cache)
    db = sqlite3.connect(cache / "responses.sqlite")
    total = db.execute("SELECT count(*) FROM responses").fetchone()[0]
    db.execute("DELETE FROM responses WHERE rowid % 2 = 0")
    db.commit()
    kept = db.execute("SELECT count(*) FROM responses").fetchone()[0]
    db.close()
    assert total >= 4 and 0 < kept < total
    warm = run(tmp_path / "warm", cache)

    calls = [c for r in read_events(warm) for c in r.model_calls()]
    served = sum(c.cached for c in calls)
    assert 0 < served < len(calls), (served, len(calls))  # partly warm, as intended
    assert not any(c.cached for r in read_events(fresh) for c in r.model_calls())

    fresh_snapshots, fresh_verdicts = outcome(fresh)
    warm_snapshots, warm_verdicts = outcome(warm)
    assert warm_snapshots == fresh_snapshots
    assert warm_verdicts == fresh_verdicts
