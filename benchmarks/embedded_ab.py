"""Embedded engine variants side by side on one stream of real requests.

A scenario runs once through the runner on the embedded model; every request any role makes is
sent to each variant in turn (rotating who goes first), and the first variant's answer drives
the run. So all variants see exactly the same prompts in the same order, and load from other
jobs on the machine falls on all of them alike. Variants:

- shared:    one llama.cpp context for every role, prefix reuse only from what it holds now
             (the engine before prefix states)
- states:    one context plus the RAM cache of slim prefix states (memeval's engine: prompts
             evaluated in aligned 64-token chunks, prefixes reused in whole chunks)
- any-prefix: `states` as it was before whole chunks: 512-token batches from wherever the
             reused prefix ends, any matching prefix reused (prefix_state.py)
- per-role:  one context per role, no state cache
- flash:     `states` with flash attention on

    .venv/bin/python benchmarks/embedded_ab.py [--scenario legal-rag] [--variants states,shared]
        [--model qwen2.5-coder-0.5b]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import ROLE_ORDER, machine, table
from prefix_state import AnyPrefix

from memeval.models import guard
from memeval.models.base import ChatResponse, Message, ToolChoice
from memeval.models.local import LocalModel, _Engine
from memeval.models.spec import LOCAL_DEFAULTS
from memeval.models.weights import LocalModelInfo, lookup
from memeval.runner import RunOptions, execute
from memeval.systems.factory import SystemEnv
from memeval.systems.file import FileSystemMemory
from reference_memory import SQLiteStore

ROLES = ("agent", "summarizer", "updater", "safety", "compactor")
LOAD_S: dict[str, float] = {}  # variant -> seconds spent loading its contexts


class _NoStore:
    """A state cache that keeps nothing: the engine reuses only the prefix its context holds."""

    def __setitem__(self, key: Any, value: Any) -> None:
        pass

    def __getitem__(self, key: Any) -> Any:
        raise KeyError(key)


class ContextOnly(_Engine):
    """The engine without prefix states."""

    def _load(self) -> None:
        super()._load()
        self._states = _NoStore()


def file_memory_without_timeout(env: SystemEnv) -> FileSystemMemory:
    """`--memory file`, but with no per-call timeout: one pipeline call here is a call to every
    variant in turn, which may well take longer than the pipeline's 180 s limit for one."""
    env.workdir.mkdir(parents=True, exist_ok=True)
    store = SQLiteStore(env.workdir / "memory.sqlite")
    return FileSystemMemory(env.memory_models, store, call_timeout_s=None, **env.options)


def variant_models(name: str, info: LocalModelInfo) -> dict[str, LocalModel]:
    """role -> a LocalModel whose engine is this variant's."""
    engines: dict[str, Callable[[], _Engine]] = {
        "shared": lambda: ContextOnly(info),
        "states": lambda: _Engine(info),
        "per-role": lambda: ContextOnly(info),
        "flash": lambda: _Engine(info, flash_attn=True),
        "any-prefix": lambda: AnyPrefix(info),
    }
    shared = engines[name]()
    models = {}
    for role in ROLES:
        model = LocalModel(info.name)
        model.engine = engines[name]() if name == "per-role" else shared
        models[role] = model
    return models


@dataclass
class Sample:
    variant: str
    role: str
    latency_s: float
    prompt_tokens: int
    cached_prompt_tokens: int
    completion_tokens: int
    same_answer: bool


class Shadowed:
    """One role: asks every variant the same request, returns the first variant's answer."""

    def __init__(self, role: str, variants: dict[str, LocalModel], samples: list[Sample]) -> None:
        self.role = role
        self.variants = variants
        self.samples = samples
        self.name = next(iter(variants.values())).name
        self._turn = 0

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        schema: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        tool_choice: ToolChoice = "auto",
    ) -> ChatResponse:
        names = list(self.variants)
        shift = self._turn % len(names)
        self._turn += 1
        answers: dict[str, ChatResponse] = {}
        for name in names[shift:] + names[:shift]:
            answers[name] = await self.variants[name].chat(
                messages,
                tools=tools,
                schema=schema,
                max_tokens=max_tokens,
                temperature=temperature,
                tool_choice=tool_choice,
            )
        primary = answers[names[0]]
        for name, r in answers.items():
            same = (r.content, r.tool_calls) == (primary.content, primary.tool_calls)
            self.samples.append(
                Sample(
                    name,
                    self.role,
                    r.latency_s,
                    r.prompt_tokens,
                    r.cached_prompt_tokens,
                    r.completion_tokens,
                    same,
                )
            )
        return primary


def render(samples: list[Sample], names: list[str]) -> str:
    by: dict[tuple[str, str], list[Sample]] = defaultdict(list)
    for s in samples:
        by[(s.variant, s.role)].append(s)
        by[(s.variant, "all")].append(s)
    base = sum(s.latency_s for s in by[(names[0], "all")])
    rows: list[list[Any]] = []
    for name in names:
        every = by[(name, "all")]
        total = sum(s.latency_s for s in every)
        prompt = sum(s.prompt_tokens for s in every)
        cached = sum(s.cached_prompt_tokens for s in every)
        load = LOAD_S.get(name, 0.0)
        row: list[Any] = [name, f"{load:.1f}", f"{total:.0f}", f"{total / base:.2f}"]
        row += [f"{sum(s.latency_s for s in by[(name, r)]):.0f}" for r in ROLE_ORDER[:-1]]
        row += [
            f"{cached / prompt:.0%}" if prompt else "-",
            prompt - cached,
            sum(s.completion_tokens for s in every),
            f"{sum(s.same_answer for s in every)}/{len(every)}",
        ]
        rows.append(row)
    headers = ["variant", "load s", "model s", "vs first", *[f"{r} s" for r in ROLE_ORDER[:-1]]]
    headers += ["prefix hit", "tokens evaluated", "generated", "same answer"]
    return table(headers, rows)


async def run(scenario: str, model: str, names: list[str], out: Path) -> list[Sample]:
    info = lookup(model)
    variants = {name: variant_models(name, info) for name in names}
    for name, models in variants.items():  # load up front: loading is not a request's cost
        engines = {id(m.engine): m.engine for m in models.values()}.values()
        LOAD_S[name] = 0.0
        for engine in engines:
            LOAD_S[name] += await asyncio.to_thread(engine.ensure_loaded)
    samples: list[Sample] = []
    chat_models: dict[str, Any] = {
        role: Shadowed(role, {n: variants[n][role] for n in names}, samples) for role in ROLES
    }
    options = RunOptions(
        targets=[scenario],
        memory=f"{Path(__file__).stem}:file_memory_without_timeout",
        out=out,
        cache=False,
        chat_models=chat_models,
        progress=False,
    )
    await execute(options)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="legal-rag")
    parser.add_argument("--variants", default="states,shared,per-role,flash")
    parser.add_argument("--model", default=LOCAL_DEFAULTS["updater"], help="embedded model name")
    args = parser.parse_args()
    names = [n.strip() for n in args.variants.split(",") if n.strip()]
    started = time.perf_counter()
    print(f"machine: {machine()}")
    with guard.model_requests_allowed(), tempfile.TemporaryDirectory() as out:
        samples = asyncio.run(run(args.scenario, args.model, names, Path(out)))
    calls = len(samples) // len(names)
    print(f"{args.scenario}: {calls} requests, each sent to {len(names)} variants; turns only")
    print(render(samples, names))
    print("same answer: the variant's reply equals the first variant's (greedy decoding)")
    print(f"machine at the end: {machine()}")
    print(f"(benchmark took {time.perf_counter() - started:.0f}s)")


if __name__ == "__main__":
    main()
