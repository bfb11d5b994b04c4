"""The response cache on the real path: `memeval run combined` twice with the cache on, then once
with --no-cache, against a deterministic OpenAI-compatible server with a fixed latency.

`fake` never goes through the cache (there is nothing to save), so this drives the `openai:`
back end over HTTP on 127.0.0.1; the server counts the requests that really reached it. The
cache lives in a throw-away MEMEVAL_CACHE_DIR. The embedded model's own cold/warm pair is in
benchmarks/embedded.py ("rerun on warm cache").

    .venv/bin/python benchmarks/cache.py [--latency 0.2] [--scenario combined]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _common import fresh_cache_dir, machine, replay_wall, run_calls, run_cli, table
from _stub_openai import StubServer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per request")
    parser.add_argument("--scenario", default="combined")
    args = parser.parse_args()
    started = time.perf_counter()
    rows = []
    with (
        StubServer(args.latency) as server,
        fresh_cache_dir() as cache,
        tempfile.TemporaryDirectory() as out,
    ):
        env = {
            "OPENAI_BASE_URL": server.url,
            "OPENAI_API_KEY": "stub",
            "MEMEVAL_CACHE_DIR": str(cache),
        }
        base = [args.scenario, "--model", "openai:stub"]
        plan = [("1st, empty cache", []), ("2nd, warm cache", []), ("--no-cache", ["--no-cache"])]
        first_wall = 0.0
        for label, extra in plan:
            before = server.requests
            run = run_cli([*base, *extra], Path(out), env)
            calls = run_calls(run.run_dir)
            requests = server.requests - before
            turn_calls = [c for c in calls if c.role != "judge"]  # the judge's hits aren't logged
            hits = sum(1 for c in turn_calls if c.cached)
            first_wall = first_wall or run.wall_s
            rows.append(
                [
                    label,
                    f"{run.wall_s:.1f}",
                    f"{replay_wall(run.run_dir):.1f}",
                    requests,
                    f"{hits}/{len(turn_calls)}",
                    f"{run.wall_s / first_wall:.2f}",
                ]
            )
    print(f"machine: {machine()}")
    print(
        f"memeval run {args.scenario} --model openai:stub; stub server answers every request "
        f"after {args.latency:g}s"
    )
    headers = ["run", "wall s", "replay s", "server requests", "turn calls cached", "wall vs 1st"]
    print(table(headers, rows))
    print("requests include the judge's; cached turn calls are counted from events.jsonl")
    print(f"(benchmark took {time.perf_counter() - started:.0f}s)")


if __name__ == "__main__":
    main()
