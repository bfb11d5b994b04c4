"""Judge strategies side by side on the bundled control answers, with an embedded model.

Every control answer of the chosen scenarios (`controls:` on each question, DESIGN §7.4) is
put to the judge exactly as `memeval scenarios calibrate` puts it: the criterion, the user
message, the session's reference memory, the control's tool calls with their fixture results
and its answer. A verdict is right when it matches the control's known verdict ("fail" and
"not-attempted" are both right on a known-fail control); a judge error counts as could-not-
grade. Results stream to a JSONL file, so an interrupted run continues (--resume), and the
work can be split (--questions, --strategies) to keep each stretch short.

    .venv/bin/python benchmarks/judge.py [--model qwen2.5-coder-1.5b] [--strategies single,...]
        [--scenarios combined] [--questions PREFIX,...] [--jsonl /tmp/judge.jsonl] [--resume]

`--report` prints the table of an existing JSONL.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import machine
from memeval.grading.calibrate import Control, check_control, load_controls
from memeval.grading.judge_strategies import STRATEGIES, strategy_for
from memeval.models.local import LocalModel


def key_of(control: Control) -> str:
    return f"{control.scenario}/{control.turn.id}/{control.label}"


async def judge_one(model: LocalModel, strategy: str, control: Control) -> dict[str, Any]:
    question = control.turn.question
    assert question is not None
    chosen = strategy_for(strategy, model.name)
    record = control.record(control.session.reference_memory)
    started = time.perf_counter()
    # an embedded judge gets no deadline, as in a run (memeval.grading.judge.judge_deadline)
    result = await chosen.judge(
        model, record, question.criterion, check_control(control), timeout_s=None
    )
    seconds = time.perf_counter() - started
    verdict = result.verdict
    right = None
    if verdict != "error":
        right = verdict == "pass" if control.known == "pass" else verdict != "pass"
    return {
        "model": model.name,
        "strategy": strategy,
        "control": key_of(control),
        "type": question.type,
        "known": control.known,
        "verdict": verdict,
        "right": right,
        "reason": result.reason or result.error or "",
        "seconds": round(seconds, 2),
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
    }


def read_rows(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def report(rows: list[dict[str, Any]]) -> str:
    by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by[(row["model"], row["strategy"])].append(row)
    head = (
        "| model | judge | right | accuracy | pass controls right | fail controls right "
        "| precision on fail | could not grade | not attempted | median s |"
    )
    lines = [head, "|" + "---|" * 10]
    for (model, strategy), group in sorted(by.items()):
        graded = [r for r in group if r["right"] is not None]
        right = sum(bool(r["right"]) for r in graded)
        passes = [r for r in graded if r["known"] == "pass"]
        fails = [r for r in graded if r["known"] == "fail"]
        said_fail = [r for r in graded if r["verdict"] != "pass"]
        precision = sum(r["known"] == "fail" for r in said_fail)
        accuracy = f"{right / len(graded):.0%}" if graded else "-"
        lines.append(
            f"| {model} | `{strategy}` | {right}/{len(graded)} | {accuracy} "
            f"| {sum(bool(r['right']) for r in passes)}/{len(passes)} "
            f"| {sum(bool(r['right']) for r in fails)}/{len(fails)} "
            f"| {precision}/{len(said_fail)} | {len(group) - len(graded)} "
            f"| {sum(r['verdict'] == 'not-attempted' for r in group)} "
            f"| {statistics.median(r['seconds'] for r in group):.1f} |"
        )
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> None:
    path = Path(args.jsonl)
    done = (
        {(r["model"], r["strategy"], r["control"]) for r in read_rows(path)}
        if args.resume
        else set()
    )
    if not args.resume and path.exists():
        path.unlink()
    controls = load_controls(args.scenarios.split(","))
    if args.questions:
        prefixes = tuple(args.questions.split(","))
        controls = [c for c in controls if key_of(c).startswith(prefixes)]
    model = LocalModel(args.model)
    print(machine(), flush=True)
    with path.open("a", encoding="utf-8") as out:
        # strategies interleaved per question, so load from other jobs falls on all alike
        for control in controls:
            for strategy in args.strategies.split(","):
                if (model.name, strategy, key_of(control)) in done:
                    continue
                row = await judge_one(model, strategy, control)
                out.write(json.dumps(row) + "\n")
                out.flush()
                mark = {True: "ok", False: "WRONG", None: "error"}[row["right"]]
                print(
                    f"{strategy:>10} {row['control']:<44} known {row['known']:<4} "
                    f"judge {row['verdict']:<13} {mark:<5} {row['seconds']:.1f}s",
                    flush=True,
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--scenarios", default="combined")
    parser.add_argument("--questions", default="", help="control key prefixes, comma-separated")
    parser.add_argument("--jsonl", default="/tmp/memeval-judge.jsonl")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--report", action="store_true", help="print the table of --jsonl")
    args = parser.parse_args()
    unknown = [s for s in args.strategies.split(",") if s not in STRATEGIES]
    if unknown:
        parser.error(f"unknown strategies {unknown} (valid: {', '.join(STRATEGIES)})")
    if args.report:
        print(report(read_rows(Path(args.jsonl))))
        return
    os.environ.setdefault("MEMEVAL_LOCAL_THREADS", "2")
    asyncio.run(main_async(args))
    print(report(read_rows(Path(args.jsonl))))


if __name__ == "__main__":
    main()
