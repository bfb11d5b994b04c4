"""Model calls and tokens per turn by role, on turns with and without compaction, against the
design's budget: at most 3 memory calls on a normal turn, at most 4 with compaction.

Two sources, printed one after the other:
1. A deterministic writer stand-in (one `add` op of ~230 characters per turn, `allow`, and a
   compactor that cuts the oldest bullets to the target), so every turn writes and the file
   crosses the 7,000-character trigger again and again. It reports zero tokens: like `fake`,
   it is not a model, so only its call counts mean something.
2. A saved run with real token counts (`--run-dir`, default: the newest benchmarks/embedded.py
   run under reports/benchmarks), e.g. the embedded model on `memeval run combined`.

    .venv/bin/python benchmarks/calls.py [--scenario combined] [--run-dir reports/...]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import tempfile
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from _common import ROLE_ORDER, ROOT, machine, run_turns, table

from memeval.models.base import ChatResponse, Message
from memeval.models.fake import FakeModel
from memeval.models.spec import parse_spec
from memeval.models.synth import synthesize
from memeval.rundir.record import ModelCall, TurnRecord
from memeval.runner import RunOptions, execute
from reference_memory import TARGET

MEMORY_ROLES = ("summarizer", "updater", "safety", "compactor")
BUDGET = {"normal": 3, "compaction": 4}
_MEMORY = re.compile(r"<memory>\n(.*)\n</memory>", re.DOTALL)


class Writer:
    """A stand-in for one pipeline role whose answers make the memory file grow every turn."""

    def __init__(self, role: str) -> None:
        self.role = role
        self.name = "fake"  # recorded as the stand-in it is, never as a model
        self._fake = FakeModel()

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        schema: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> ChatResponse:
        last = str(messages[-1].get("content") or "")
        tag = hashlib.sha256(last.encode()).hexdigest()[:8]
        if self.role == "summarizer":
            return ChatResponse(content=f"The user said something worth keeping ({tag}).")
        if self.role == "compactor":
            return ChatResponse(content=_cut_to_target(last))
        props = (schema or {}).get("properties") or {}
        if "ops" in props:
            text = f"- [user] Convention {tag}: " + "keep exact names and numbers. " * 6
            op = {"op": "add", "anchor": "## Conventions", "text": text.strip()}
            return ChatResponse(content=json.dumps({"ops": [op]}))
        if schema is not None:
            return ChatResponse(content=json.dumps(_allowing(synthesize(schema, text=tag))))
        return await self._fake.chat(messages, schema=schema)


def _allowing(value: Any) -> Any:
    """A safety answer that lets the text through, whatever the strategy's schema."""
    if isinstance(value, dict):
        allow = {k: "no" if v == "yes" else v for k, v in value.items()}
        return {**allow, "verdict": "allow"} if "verdict" in value else allow
    return value


def _cut_to_target(prompt: str) -> str:
    """The file inside <memory> with its oldest bullets dropped until it fits the target."""
    found = _MEMORY.search(prompt)
    lines = (found.group(1) if found else "").splitlines()
    bullets = [i for i, line in enumerate(lines) if line.startswith("- ")]
    drop: set[int] = set()
    while bullets and len("\n".join(lines)) - sum(len(lines[i]) + 1 for i in drop) > TARGET:
        drop.add(bullets.pop(0))
    return "\n".join(line for i, line in enumerate(lines) if i not in drop) + "\n"


def stand_in_run(scenario: str, out: Path) -> list[TurnRecord]:
    options = RunOptions(
        targets=[scenario],
        model=parse_spec("fake"),
        out=out,
        chat_models={role: Writer(role) for role in MEMORY_ROLES},
        progress=False,
    )
    outcome = asyncio.run(execute(options))
    return run_turns(outcome.run_dir)


def turn_class(record: TurnRecord) -> str:
    if record.update.compaction is not None:
        return "compaction"
    return "write" if record.update.status == "written" else "no write"


def per_turn_table(records: list[TurnRecord]) -> str:
    """Calls per turn by role and class, tokens per call, and the budget check."""
    groups: dict[str, list[TurnRecord]] = defaultdict(list)
    for r in records:
        groups[turn_class(r)].append(r)
    rows = []
    for name in ("no write", "write", "compaction"):
        group = groups.get(name, [])
        if not group:
            continue
        counts = [_memory_calls(r) for r in group]
        budget = BUDGET["compaction" if name == "compaction" else "normal"]
        row: list[Any] = [name, len(group)]
        for role in ROLE_ORDER[:-1]:  # the judge runs after the turns
            n = [sum(1 for c in r.calls if c.role == role) for r in group]
            row.append(f"{sum(n) / len(group):.2f}")
        row += [
            f"{sum(counts) / len(group):.2f} / {max(counts)}",
            f"<= {budget}",
            f"{sum(1 for n in counts if n <= budget)}/{len(group)}",
        ]
        rows.append(row)
    headers = ["turns", "n", *ROLE_ORDER[:-1], "memory calls mean / max", "budget", "within"]
    return table(headers, rows)


def tokens_table(records: list[TurnRecord]) -> str:
    """Prompt and completion tokens per call and per turn, by role."""
    calls: dict[str, list[ModelCall]] = defaultdict(list)
    for r in records:
        for c in r.calls:
            calls[c.role].append(c)
    rows = []
    for role in ROLE_ORDER[:-1]:
        cs = calls.get(role, [])
        if not cs:
            continue
        prompt = sum(c.prompt_tokens for c in cs)
        completion = sum(c.completion_tokens for c in cs)
        rows.append(
            [
                role,
                len(cs),
                f"{prompt / len(cs):.0f}",
                f"{completion / len(cs):.0f}",
                f"{(prompt + completion) / len(records):.0f}",
            ]
        )
    headers = ["role", "calls", "prompt tok/call", "completion tok/call", "tokens/turn"]
    return table(headers, rows)


def _memory_calls(record: TurnRecord) -> int:
    return sum(1 for c in record.calls if c.role in MEMORY_ROLES)


def newest_embedded_run() -> Path | None:
    root = ROOT / "reports" / "benchmarks"
    runs = sorted(p.parent for p in root.glob("*/benchmark.json")) if root.is_dir() else []
    return runs[-1] if runs else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="combined")
    parser.add_argument("--run-dir", type=Path, help="a saved run with real token counts")
    args = parser.parse_args()
    started = time.perf_counter()
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory() as out:
        records = stand_in_run(args.scenario, Path(out))
    compactions = sum(1 for r in records if turn_class(r) == "compaction")
    print(f"\n1. writer stand-in, {args.scenario}: {len(records)} turns, {compactions} compactions")
    print("   (zero tokens: the stand-in is not a model; its call counts are the pipeline's)")
    print(per_turn_table(records))
    run_dir = args.run_dir or newest_embedded_run()
    if run_dir is None:
        print("\n2. no saved run with real tokens: run benchmarks/embedded.py or pass --run-dir")
    else:
        real = run_turns(run_dir)
        models = sorted({c.model for r in real for c in r.calls})
        print(f"\n2. {run_dir.name} ({', '.join(models)}): {len(real)} turns")
        print(per_turn_table(real))
        print(tokens_table(real))
    print(f"(benchmark took {time.perf_counter() - started:.0f}s)")


if __name__ == "__main__":
    main()
