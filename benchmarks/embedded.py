"""`memeval run combined` on the embedded defaults: wall time, time per role, prompt tokens per
call and llama.cpp prefix-cache hits, then the same command again on the warm response cache.

The response cache starts empty (a throw-away MEMEVAL_CACHE_DIR that only borrows the joined
weights), so the first pass measures the model, not the cache. `--env K=V` sets a variable for
the child (e.g. MEMEVAL_LOCAL_SLOTS=1 for one shared llama.cpp context); `--analyze` prints the
same table for saved run directories side by side, without running anything.

    .venv/bin/python benchmarks/embedded.py [--scenario combined] [--env K=V]... [--no-rerun]
    .venv/bin/python benchmarks/embedded.py --analyze reports/benchmarks/RUN_A reports/...RUN_B
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from _common import (
    ROLE_ORDER,
    ROOT,
    Call,
    fresh_cache_dir,
    machine,
    p50,
    replay_wall,
    run_calls,
    run_cli,
    run_turns,
    table,
)

SUMMARY_FILE = "benchmark.json"  # written next to run.json: walls measured from outside


def summarize(run_dir: Path) -> dict[str, Any]:
    """Numbers for one saved run; walls come from benchmark.json when this script ran it."""
    calls = run_calls(run_dir)
    turns = run_turns(run_dir)
    extra_path = run_dir / SUMMARY_FILE
    extra = json.loads(extra_path.read_text()) if extra_path.is_file() else {}
    out: dict[str, Any] = {
        "run": extra.get("label") or run_dir.name[-28:],
        "wall_s": extra.get("wall_s"),
        "cpu_s": extra.get("cpu_s"),
        "rerun_wall_s": extra.get("rerun_wall_s"),
        "rerun_model_calls": extra.get("rerun_model_calls"),
        "replay_s": replay_wall(run_dir),
        "turns": len(turns),
        "calls": len(calls),
        "errors": sum(1 for c in calls if c.error),
        "load": extra.get("load"),
        "load_end": extra.get("load_end"),
        "env": extra.get("env", {}),
    }
    by_role: dict[str, list[Call]] = defaultdict(list)
    for call in calls:
        by_role[call.role].append(call)
    out["roles"] = {role: _role_numbers(by_role[role]) for role in ROLE_ORDER if by_role[role]}
    out["all"] = _role_numbers(calls)
    agent = [r.timings.get("agent_s", 0.0) for r in turns if "agent_s" in r.timings]
    update = [r.timings.get("update_s", 0.0) for r in turns]
    out["agent_turn_p50_s"], out["update_turn_p50_s"] = p50(agent), p50(update)
    return out


def _role_numbers(calls: list[Call]) -> dict[str, float]:
    prompt = sum(c.prompt_tokens for c in calls)
    reused = sum(c.cached_prompt_tokens for c in calls)
    return {
        "calls": len(calls),
        "total_s": sum(c.latency_s for c in calls),
        "p50_s": p50([c.latency_s for c in calls]),
        "prompt_per_call": prompt / len(calls) if calls else 0.0,
        "evaluated_per_call": (prompt - reused) / len(calls) if calls else 0.0,
        "completion_per_call": sum(c.completion_tokens for c in calls) / len(calls)
        if calls
        else 0.0,
        "prefix_hit": reused / prompt if prompt else 0.0,
    }


def render(summaries: list[dict[str, Any]]) -> str:
    headers = ["", *[s["run"] for s in summaries]]

    def fmt(value: Any, unit: str = "") -> str:
        if value is None:
            return "-"
        if isinstance(value, float):
            return f"{value:.1f}{unit}" if unit != "%" else f"{100 * value:.0f}%"
        return f"{value}{unit}"

    rows: list[list[Any]] = [
        ["wall, `memeval run` (s)", *[fmt(s["wall_s"]) for s in summaries]],
        ["  replay of the turns (s)", *[fmt(s["replay_s"]) for s in summaries]],
        ["CPU, user + system (s)", *[fmt(s["cpu_s"]) for s in summaries]],
        ["turns / model calls", *[f"{s['turns']} / {s['calls']}" for s in summaries]],
        ["failed calls", *[s["errors"] for s in summaries]],
        ["agent turn p50 (s)", *[fmt(s["agent_turn_p50_s"]) for s in summaries]],
        ["memory update p50 (s)", *[fmt(s["update_turn_p50_s"]) for s in summaries]],
        ["prefix-cache hit, all calls", *[fmt(s["all"]["prefix_hit"], "%") for s in summaries]],
    ]
    for role in ROLE_ORDER:
        present = [s["roles"].get(role) for s in summaries]
        if not any(present):
            continue
        rows.append([f"{role}: calls, total s", *[_pair(r, "calls", "total_s") for r in present]])
        rows.append(["  p50 s per call", *[_one(r, "p50_s", "{:.1f}") for r in present]])
        rows.append(
            [
                "  prompt / evaluated / out tok",
                *[
                    "-"
                    if r is None
                    else f"{r['prompt_per_call']:.0f} / {r['evaluated_per_call']:.0f} / "
                    f"{r['completion_per_call']:.0f}"
                    for r in present
                ],
            ]
        )
        rows.append(["  prefix-cache hit", *[_one(r, "prefix_hit", "{:.0%}") for r in present]])
    rows.append(["rerun on warm cache (s)", *[fmt(s["rerun_wall_s"]) for s in summaries]])
    rows.append(["  model calls made", *[fmt(s["rerun_model_calls"]) for s in summaries]])
    rows.append(["env", *[" ".join(f"{k}={v}" for k, v in s["env"].items()) for s in summaries]])
    rows.append(["load avg at start", *[s["load"] or "-" for s in summaries]])
    rows.append(["load avg at end", *[s["load_end"] or "-" for s in summaries]])
    return table(headers, rows)


def _pair(r: dict[str, float] | None, a: str, b: str) -> str:
    return "-" if r is None else f"{r[a]:.0f}, {r[b]:.0f}"


def _one(r: dict[str, float] | None, key: str, form: str) -> str:
    return "-" if r is None else form.format(r[key])


def measure(scenario: str, env: dict[str, str], out: Path, rerun: bool, label: str) -> Path:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    with fresh_cache_dir() as cache:
        child_env = {**env, "MEMEVAL_CACHE_DIR": str(cache)}
        first = run_cli([scenario], out, child_env)
        summary: dict[str, Any] = {
            "label": label,
            "wall_s": first.wall_s,
            "cpu_s": first.cpu_s,
            "load": load,
            "load_end": ", ".join(f"{x:.2f}" for x in os.getloadavg()),
            "env": env,
        }
        if rerun:  # the same command on the now-warm response cache
            second = run_cli([scenario], out, child_env)
            calls = run_calls(second.run_dir)
            summary["rerun_wall_s"] = second.wall_s
            summary["rerun_model_calls"] = sum(1 for c in calls if not c.cached)
            summary["rerun_run"] = second.run_dir.name
    (first.run_dir / SUMMARY_FILE).write_text(json.dumps(summary, indent=2))
    return first.run_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="combined")
    parser.add_argument("--env", action="append", default=[], metavar="K=V")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "benchmarks")
    parser.add_argument("--label", default="", help="a name for this configuration")
    parser.add_argument("--no-rerun", action="store_true", help="skip the warm-cache pass")
    parser.add_argument("--analyze", nargs="+", type=Path, metavar="RUN_DIR")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    if args.analyze:
        print(render([summarize(d) for d in args.analyze]))
        return
    env = dict(item.split("=", 1) for item in args.env)
    started = time.perf_counter()
    run_dir = measure(args.scenario, env, args.out, not args.no_rerun, args.label)
    print(f"memeval run {args.scenario} on the embedded defaults -> {run_dir}")
    print(render([summarize(run_dir)]))
    print(f"(benchmark took {time.perf_counter() - started:.0f}s)")


if __name__ == "__main__":
    main()
