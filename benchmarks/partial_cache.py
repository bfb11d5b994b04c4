"""Is a run's result independent of what the response cache held?

Copies the response cache (MEMEVAL_CACHE_DIR, else ~/.cache/memeval) into two throw-away
directories that link the joined weights, drops a share of the stored answers from the second
copy at random, and runs `memeval run SCENARIO` on each. The run on the full copy replays every
call; the other computes the dropped calls again, each on an engine whose prefix state is
whatever came before it in that run (nothing, right after loading, or another call's prompt),
unlike the run that stored them. An answer that depends on the request alone comes out the
same, and so does everything after it. Prints the calls each run computed and what differs
between the two runs: memory snapshots, turns' write verdicts, answers, question verdicts.

Run it after a full run of the same scenario on the same code, so the cache holds its answers:

    .venv/bin/python benchmarks/partial_cache.py [--scenario combined] [--drop 0.1] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
from _common import fresh_cache_dir, machine, run_calls, run_cli, table

from memeval.models.pool import cache_path

CACHE_FILE = cache_path().name  # the response cache's file inside a MEMEVAL_CACHE_DIR


def copy_responses(source: Path, target: Path) -> None:
    """Copy the response cache file `source` into the cache directory `target` (a consistent
    copy, through SQLite's backup)."""
    with sqlite3.connect(source) as src, sqlite3.connect(target / CACHE_FILE) as dst:
        src.backup(dst)


def drop_answers(cache: Path, share: float, seed: int) -> tuple[int, int]:
    """Delete `share` of the stored answers (and unusable replies) at random; (dropped, held)."""
    with sqlite3.connect(cache / CACHE_FILE) as db:
        keys = [
            (table_name, key)
            for table_name in ("responses", "reply_errors")
            for (key,) in db.execute(f"SELECT key FROM {table_name} ORDER BY key")
        ]
        chosen = random.Random(seed).sample(keys, round(share * len(keys)))
        for table_name, key in chosen:
            db.execute(f"DELETE FROM {table_name} WHERE key = ?", (key,))
    return len(chosen), len(keys)


def _text(column: pd.Series) -> pd.Series:
    """A column as text, empty where it holds nothing, so two runs compare cell by cell."""
    return column.astype(object).where(column.notna(), "").astype(str)


def differences(full: Path, partial: Path) -> list[list[object]]:
    """One row per kind of result: how many there are and how many differ between the runs."""
    rows: list[list[object]] = []
    a_snaps = {p.relative_to(full): p.read_bytes() for p in (full / "snapshots").rglob("*.md")}
    b_snaps = {
        p.relative_to(partial): p.read_bytes() for p in (partial / "snapshots").rglob("*.md")
    }
    names = sorted(set(a_snaps) | set(b_snaps))
    rows.append(
        ["memory snapshots", len(names), sum(a_snaps.get(n) != b_snaps.get(n) for n in names)]
    )
    key = ["scenario", "repeat", "turn"]
    turns = pd.read_csv(full / "turns.csv").merge(
        pd.read_csv(partial / "turns.csv"), on=key, how="outer", suffixes=("_a", "_b")
    )
    for column in ("write", "ops", "agent_error"):
        a, b = turns[f"{column}_a"], turns[f"{column}_b"]
        rows.append([f"turns: {column}", len(turns), int((_text(a) != _text(b)).sum())])
    questions = pd.read_csv(full / "questions.csv").merge(
        pd.read_csv(partial / "questions.csv"), on=key, how="outer", suffixes=("_a", "_b")
    )
    for column in ("answer", "tool_calls", "verdict"):
        a, b = questions[f"{column}_a"], questions[f"{column}_b"]
        rows.append([f"questions: {column}", len(questions), int((_text(a) != _text(b)).sum())])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="combined")
    parser.add_argument("--drop", type=float, default=0.1, help="share of stored answers to drop")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not 0 < args.drop <= 1:
        parser.error(f"--drop {args.drop}: give a share between 0 (exclusive) and 1")
    source = cache_path()
    if not source.is_file():
        print(
            f"error: no response cache at {source}; run the scenario first",
            file=sys.stderr,
        )
        raise SystemExit(2)
    print(f"machine: {machine()}", flush=True)
    started = time.perf_counter()
    with (
        tempfile.TemporaryDirectory(prefix="memeval-partial-") as tmp,
        fresh_cache_dir(Path(tmp) / "full") as full,  # the weights linked, not copied
        fresh_cache_dir(Path(tmp) / "partial") as partial,
    ):
        root = Path(tmp)
        copy_responses(source, full)
        copy_responses(source, partial)
        dropped, held = drop_answers(partial, args.drop, args.seed)
        print(
            f"{args.scenario}: {held} stored answers, {dropped} dropped from the second copy",
            flush=True,
        )
        runs = {}
        for name, cache in (("full cache", full), ("dropped answers", partial)):
            runs[name] = run_cli([args.scenario], root / "runs" / name.replace(" ", "-"),
                                 env={"MEMEVAL_CACHE_DIR": str(cache)})  # fmt: skip
        rows = []
        for name, r in runs.items():
            calls = run_calls(r.run_dir)
            computed = [c for c in calls if not c.cached]
            seconds = sum(c.latency_s for c in computed)
            rows.append(
                [
                    name,
                    len(calls),
                    len(computed),
                    f"{seconds:.0f}",
                    f"{r.wall_s:.0f}",
                    r.run_dir.name,
                ]
            )
        print(table(["cache", "calls", "computed", "computed s", "wall s", "run"], rows))
        print()
        a, b = (r.run_dir for r in runs.values())
        print(table(["result", "count", "differ"], differences(a, b)))
        kept = Path("reports") / "benchmarks" / "partial_cache"
        kept.mkdir(parents=True, exist_ok=True)
        for r in runs.values():
            shutil.copytree(r.run_dir, kept / r.run_dir.name, dirs_exist_ok=True)
        print(f"runs kept under {kept}")
    print(f"machine at the end: {machine()}")
    print(f"(benchmark took {time.perf_counter() - started:.0f}s)")


if __name__ == "__main__":
    main()
