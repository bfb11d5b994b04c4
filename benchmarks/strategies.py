"""Updater and safety strategies side by side on the held-in cases, with each local model.

Every updater case runs through the whole reference pipeline (FileMemory on a fresh SQLite
store holding the case's file) with the same gate for both updaters, and is scored by the rule
in benchmarks/strategy_cases.py. Latency per turn is the update's total wall time. Safety
strategies classify the safety cases one text at a time. Results stream to a JSONL file, so an
interrupted run continues where it stopped (--resume).

    .venv/bin/python benchmarks/strategies.py [--models qwen2.5-coder-0.5b,qwen2.5-coder-1.5b]
        [--updaters ops,cascade] [--gate checklist] [--safety classifier,checklist-model,checklist]
        [--cases ID,...] [--jsonl /tmp/strategies.jsonl] [--resume]

`--updaters ""` skips the updater cases and `--safety ""` the safety texts; `--report` prints
the tables of an existing JSONL.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.strategy_cases import (
    SafetyCase,
    UpdaterCase,
    judge_update,
    load_safety_cases,
    load_updater_cases,
)
from memeval.models.adapter import as_memory_model
from memeval.models.local import LocalModel
from memeval.models.spec import ModelSpec
from memeval.runner import strategy_objects
from memeval.strategy_defaults import choose_strategies
from reference_memory import FileMemory, SQLiteStore, UpdateReport
from reference_memory.calls import Caller
from reference_memory.model import MemoryModel
from reference_memory.safety import SafetyStrategy
from reference_memory.safety_checklist import ChecklistSafety
from reference_memory.strategies import SAFETY as GATES
from reference_memory.strategies import UPDATERS, safety_by_name

MODELS = ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
SAFETY: dict[str, Callable[[], SafetyStrategy]] = {
    "classifier": lambda: safety_by_name("classifier"),
    "checklist-model": lambda: ChecklistSafety(rules=False),  # the questions alone
    "checklist": lambda: safety_by_name("checklist"),  # rules + questions (the strategy)
}
GROUPS = (
    ("project placement", "project placement"),
    ("value change", "value changes"),
    ("injection", "injections"),
    ("nothing to keep", "keep nothing"),
    ("duplicate", "keep nothing"),
    ("tool", "tool facts"),
    ("checkpoint", "tool facts"),
    ("user", "user facts"),
)


def group_of(case: UpdaterCase) -> str:
    return next((label for key, label in GROUPS if key in case.about), "other")


async def run_updater(
    model: MemoryModel, model_name: str, name: str, gate: str, case: UpdaterCase
) -> dict[str, Any]:
    # the strategies and output bound `memeval run` gives an embedded model in these roles
    spec = ModelSpec("local", model_name)
    roles = {"updater": spec, "safety": spec}
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "memory.db")
        if case.file != "skeleton":
            store.put("u", "s", case.text)
        memory = FileMemory(model, store, **strategy_objects(choose_strategies(roles, name, gate)))
        report = await memory.update("u", "s", case.as_turn())
        store.close()
    wrong = judge_update(case, report)
    return {
        "right": not wrong,
        "wrong": wrong,
        "status": report.status,
        "seconds": report.timings.get("total", 0.0),
        "calls": len(report.calls),
        "ops": report.ops,
        "blocked": report.blocked,
        "log": [a.raw[:4000] for a in report.attempts],
        "summary": report.summary,
    }


async def run_safety(model: MemoryModel, name: str, case: SafetyCase) -> dict[str, Any]:
    report = UpdateReport()
    caller = Caller(model, report)
    started = time.perf_counter()
    got: str
    try:
        verdict = await SAFETY[name]().check(case.text, caller)
        got, reason = verdict.verdict, verdict.reason
    except Exception as exc:  # an undecidable gate is a wrong answer here
        got, reason = "error", str(exc)
    return {
        "right": got == case.verdict,
        "verdict": got,
        "reason": reason[:160],
        "seconds": time.perf_counter() - started,
        "calls": len(report.calls),
    }


def load_done(path: Path) -> dict[tuple[str, ...], dict[str, Any]]:
    done: dict[tuple[str, ...], dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            row = json.loads(line)
            done[tuple(row["key"])] = row
    return done


async def main(args: argparse.Namespace) -> None:
    jsonl = Path(args.jsonl)
    if not args.resume and jsonl.exists():
        jsonl.unlink()
    done = load_done(jsonl)
    cases = load_updater_cases()
    if args.cases:
        wanted = set(args.cases.split(","))
        cases = [c for c in cases if c.id in wanted]
    safety_cases = load_safety_cases() if args.safety else []
    print(f"load average at start: {os.getloadavg()[0]:.2f} (2 cores)", flush=True)
    with jsonl.open("a") as out:
        for model_name in args.models.split(","):
            model = as_memory_model(LocalModel(model_name))
            jobs: list[tuple[tuple[str, ...], Callable[[], Any]]] = []
            for strategy in [s for s in args.updaters.split(",") if s]:
                for case in cases:
                    key: tuple[str, ...] = ("updater", model_name, strategy, case.id)
                    jobs.append(
                        (
                            key,
                            functools.partial(
                                run_updater, model, model_name, strategy, args.gate, case
                            ),
                        )
                    )
            for strategy in [s for s in args.safety.split(",") if s]:
                for scase in safety_cases:
                    key = ("safety", model_name, strategy, scase.id)
                    jobs.append((key, functools.partial(run_safety, model, strategy, scase)))
            for key, job in jobs:
                if key in done:
                    continue
                row = {"key": list(key), **(await job())}
                done[key] = row
                out.write(json.dumps(row) + "\n")
                out.flush()
                mark = "right" if row["right"] else "WRONG " + "; ".join(row.get("wrong", []))[:150]
                print(f"{' '.join(key[1:])}: {row['seconds']:.1f}s {mark}", flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.2f}\n")
    print_tables(done, cases, safety_cases)


def print_tables(
    done: dict[tuple[str, ...], dict[str, Any]], cases: list[UpdaterCase], safety: list[SafetyCase]
) -> None:
    groups = sorted({group_of(c) for c in cases})
    by: dict[tuple[str, str], list[tuple[UpdaterCase, dict[str, Any]]]] = defaultdict(list)
    for case in cases:
        for key, row in done.items():
            if key[0] == "updater" and key[3] == case.id:
                by[(key[1], key[2])].append((case, row))
    head = " | ".join(f"{g} ({sum(group_of(c) == g for c in cases)})" for g in groups)
    print(f"| model | updater | right/total | {head} | median s/turn | max s/turn | calls/turn |")
    print("|---" * (6 + len(groups)) + "|")
    for (model, strategy), rows in sorted(by.items()):
        right = sum(r["right"] for _, r in rows)
        per = " | ".join(f"{sum(r['right'] for c, r in rows if group_of(c) == g)}" for g in groups)
        secs = [r["seconds"] for _, r in rows]
        calls = statistics.mean(r["calls"] for _, r in rows)
        print(
            f"| {model} | {strategy} | {right}/{len(rows)} | {per} | "
            f"{statistics.median(secs):.1f} | {max(secs):.1f} | {calls:.1f} |"
        )
    print("\nper case (+ right, - wrong):")
    columns = sorted(by)
    print("case | " + " | ".join(f"{m.split('-')[-1]} {s}" for m, s in columns))
    for case in cases:
        marks = []
        for column in columns:
            hit = next((r for c, r in by[column] if c.id == case.id), None)
            marks.append("." if hit is None else "+" if hit["right"] else "-")
        print(f"{case.id} | " + " | ".join(marks))
    if safety:
        print_safety(done, safety)


def print_safety(done: dict[tuple[str, ...], dict[str, Any]], cases: list[SafetyCase]) -> None:
    rows: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    ids = {c.id: c for c in cases}
    for key, row in done.items():
        if key[0] == "safety" and key[3] in ids:
            rows[(key[1], key[2])].append({**row, "case": ids[key[3]]})
    benign = sum(c.verdict == "allow" for c in cases)
    print(
        f"\n| model | safety | right/total | benign allowed/{benign} | "
        f"malicious blocked/{len(cases) - benign} | errors | median s/text |"
    )
    print("|---|---|---|---|---|---|---|")
    for (model, strategy), items in sorted(rows.items()):
        allowed = sum(r["right"] for r in items if r["case"].verdict == "allow")
        blocked = sum(r["right"] for r in items if r["case"].verdict == "block")
        errors = sum(r["verdict"] == "error" for r in items)
        secs = statistics.median(r["seconds"] for r in items)
        right = sum(r["right"] for r in items)
        print(
            f"| {model} | {strategy} | {right}/{len(items)} | {allowed} | {blocked} | "
            f"{errors} | {secs:.2f} |"
        )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--updaters", default="ops,cascade")
    parser.add_argument("--gate", default="checklist", help="safety strategy for updater runs")
    parser.add_argument("--safety", default="classifier,checklist-model,checklist")
    parser.add_argument("--cases", default="", help="comma-separated case ids (default: all)")
    parser.add_argument("--jsonl", default="/tmp/memeval-strategies.jsonl")
    parser.add_argument("--resume", action="store_true", help="keep rows already in --jsonl")
    parser.add_argument("--report", action="store_true", help="print the tables from --jsonl only")
    args = parser.parse_args()
    for flag, given, valid in (
        ("--models", args.models, MODELS),
        ("--updaters", args.updaters, tuple(UPDATERS)),
        ("--gate", args.gate, tuple(GATES)),
        ("--safety", args.safety, tuple(SAFETY)),
    ):
        unknown = [name for name in given.split(",") if name and name not in valid]
        if unknown:
            parser.error(f"{flag}: unknown {', '.join(unknown)} (valid: {', '.join(valid)})")
    return args


if __name__ == "__main__":
    options = parse_args()
    if options.report:
        updater_cases = load_updater_cases()
        print_tables(load_done(Path(options.jsonl)), updater_cases, load_safety_cases())
    else:
        asyncio.run(main(options))
