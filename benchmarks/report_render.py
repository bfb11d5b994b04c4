"""How big and how fast is report.html for a realistic run? Prints numbers; asserts nothing.

Builds a hand-made run of TURNS turns x REPEATS repeats (memory growing toward the trigger
with compactions, ops, tool calls, 6-7k-char injected memory on eval turns), grades it, then
times rendering and, with --browser, Chromium's load of the page and a filter toggle.

    .venv/bin/python benchmarks/report_render.py [--turns 50] [--repeats 5] [--browser]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memeval.grading.run import grade_run
from memeval.report.render import render_report
from memeval.rundir.saved import SavedRun
from tests.memeval.rundirs import SECTIONS, RunDirBuilder

SESSION = 8  # turns per session; the last two sessions are eval sessions


def _file(bullets: list[str]) -> str:
    per: dict[str, list[str]] = {name: [] for name in SECTIONS}
    for i, b in enumerate(bullets):
        per[SECTIONS[i % len(SECTIONS)]].append(b)
    return "".join(f"## {n}\n" + "".join(f"{b}\n" for b in per[n]) + "\n" for n in SECTIONS)


def build(root: Path, turns: int, repeats: int) -> Path:
    run = RunDirBuilder(root, run_id="bench-run")
    facts = {f"fact-{k}": {"match": [f"fact number {k} "]} for k in range(12)}
    sc = run.scenario("bench", title="Synthetic report benchmark", facts=facts)
    n_sessions = max(1, turns // SESSION)
    for repeat in range(repeats):
        bullets: list[str] = []
        for i in range(turns):
            session = min(i // SESSION, n_sessions - 1)
            kind = "eval" if session >= n_sessions - 2 else "seed"
            tid, sid = f"s{session}t{i}", f"s{session}"
            calls = [
                {"role": "summarizer", "model": "bench", "prompt_tokens": 900, "latency_s": 0.8},
                {"role": "updater", "model": "bench", "prompt_tokens": 2400, "latency_s": 2.1},
            ]
            if kind == "eval":
                file = _file(bullets)
                sc.turn(
                    tid,
                    session=sid,
                    kind="eval",
                    repeat=repeat,
                    user=f"Question {i}: what did we decide about fact number {i % 12} ?",
                    answer=f"From memory: fact number {i % 12} holds; see the goal checkpoints.",
                    memory_context=file,
                    tool_calls=[
                        {
                            "name": "query_spans",
                            "arguments": {"project": "p"},
                            "result": {"rows": i},
                        }
                    ],
                    question={
                        "type": "memory-dependent" if i % 3 else "memory-corruptible",
                        "criterion": f"Mentions fact number {i % 12}.",
                        "answer_matches": [[f"fact number {i % 12}"]],
                    },
                    calls=[{"role": "agent", "model": "bench", "prompt_tokens": 3000}, *calls],
                    timings={"agent_s": 3.0, "update_s": 2.9},
                )
                continue
            line = f"- [user] fact number {i % 12} : " + "detail " * 30 + f"(turn {i})"
            bullets.append(line)
            compaction = None
            before = _file(bullets)
            if len(before) > 7000:
                bullets = bullets[len(bullets) // 4 :]  # "compaction" drops the oldest quarter
                compaction = {"text_before": before}
            sc.turn(
                tid,
                session=sid,
                repeat=repeat,
                user=f"Remember fact number {i % 12} for later, with the details.",
                file=_file(bullets),
                ops=[{"op": "add", "anchor": "## Goals\n", "text": line + "\n"}],
                compaction=compaction,
                expect={"records": [f"fact-{i % 12}"]},
                calls=calls,
                timings={"update_s": 6.0 if compaction else 2.9},
            )
    return run.write()


def browser_timings(report: Path, rounds: int = 3) -> tuple[float, float]:
    from playwright.sync_api import sync_playwright

    args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
    loads, filters = [], []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=args)
        for _ in range(rounds):
            page = browser.new_page()
            t0 = time.perf_counter()
            page.goto(report.as_uri(), wait_until="load")
            page.evaluate("new Promise(r => requestAnimationFrame(() => r(0)))")
            loads.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            page.locator("#f-fail").check()
            page.evaluate("new Promise(r => requestAnimationFrame(() => r(0)))")
            filters.append(time.perf_counter() - t0)
            page.close()
        browser.close()
    return statistics.median(loads), statistics.median(filters)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--browser", action="store_true", help="also time Chromium (Debian)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="memeval-report-bench-"))
    try:
        run_dir = build(root / "run", args.turns, args.repeats)
        t0 = time.perf_counter()
        run = SavedRun.open(run_dir)
        results = asyncio.run(grade_run(run, None))
        grade_s = time.perf_counter() - t0
        renders = []
        for _ in range(3):
            t0 = time.perf_counter()
            report = render_report(SavedRun.open(run_dir), results)
            renders.append(time.perf_counter() - t0)
        size = report.stat().st_size
        print(f"run: {args.turns} turns x {args.repeats} repeats")
        print(f"open + grade (checks, no judge): {grade_s:.2f} s")
        print(f"render report.html: median {statistics.median(renders):.2f} s of 3")
        per_turn = size / (args.turns * args.repeats)
        print(f"report.html size: {size / 1e6:.2f} MB ({per_turn:,.0f} B/turn)")
        if args.browser:
            load_s, filter_s = browser_timings(report)
            print(f"chromium load to first frame: median {load_s:.2f} s of 3")
            print(f"chromium 'only failures' toggle: median {filter_s * 1000:.0f} ms of 3")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
