"""Does an embedded answer depend on what the engine evaluated before it?

The built-in agent answers a scenario's eval questions, each asked alone (no history) with the
session's hand-written memory and fixture tools, twice per engine: warm (one engine, the
questions in order, so each request reuses the prefix the one before left: the instructions,
the memory) and cold (every evaluated prefix dropped before every model call). Greedy decoding,
so an engine whose answers are a function of the request alone gives the same answers both
ways. Engines:

- chunked:     memeval's engine (memeval.models.local): prompts evaluated in CHUNK-token
               batches at aligned positions, a prefix reused only in whole chunks
- any-prefix:  the engine before it: llama-cpp-python's 512-token batches, starting wherever
               the reused prefix ends, any matching prefix reused

    .venv/bin/python benchmarks/prefix_state.py [--scenario combined] [--questions 12]
        [--engines chunked,any-prefix] [--max-tokens 160] [--model qwen2.5-coder-1.5b]

Prints, per engine, the answers that differ and a table: questions, identical answers, model
calls and model seconds warm and cold.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from _common import machine, table
from llama_cpp import Llama

from memeval.agent import ChatAgent
from memeval.models.base import ChatResponse, Message, ToolChoice
from memeval.models.guard import model_requests_allowed
from memeval.models.local import CHUNK, LocalModel, _Engine, _slim_state
from memeval.models.weights import LocalModelInfo, lookup
from memeval.scenario.loader import resolve
from memeval.tools import FixtureTools
from reference_memory.templates import render


class AnyPrefix(_Engine):
    """The engine before whole-chunk reuse: any matching prefix is reused, the rest evaluated
    in 512-token batches from where the match ends, every state saved as it stands."""

    def __init__(self, info: LocalModelInfo) -> None:
        super().__init__(info, n_batch=512, n_ubatch=512)

    def _restore_longest_prefix(self, tokens: list[int]) -> int:
        llama = self._llama
        shared = llama.longest_token_prefix
        current = shared(llama.input_ids[: llama.n_tokens], tokens)
        try:
            state = self._states[tokens]
        except KeyError:
            state = None
        if state is not None and shared(state.input_ids[: state.n_tokens], tokens) > current:
            llama.load_state(state)
            current = shared(llama.input_ids[: llama.n_tokens], tokens)
        return max(min(current, len(tokens) - 1), 0)

    def _keep_whole_chunks(self, prompt_len: int) -> None:
        llama = self._llama
        self._states[llama.input_ids[: llama.n_tokens].tolist()] = _slim_state(llama)


class Counted:
    """The model, optionally cold before every call; counts calls and model seconds."""

    def __init__(self, model: LocalModel, cold: bool) -> None:
        self.model, self.cold = model, cold
        self.name, self.decoding = model.name, model.decoding
        self.calls, self.seconds = 0, 0.0

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
        if self.cold:
            self.model.engine.forget()
        reply = await self.model.chat(
            messages,
            tools=tools,
            schema=schema,
            max_tokens=max_tokens,
            temperature=temperature,
            tool_choice=tool_choice,
        )
        self.calls += 1
        self.seconds += reply.latency_s
        return reply


@dataclass
class Question:
    id: str
    message: str
    memory: str
    tools: FixtureTools


def questions(scenario: str, limit: int) -> list[Question]:
    out = []
    for session in resolve(scenario).sessions:
        if session.reference_memory is None:
            continue
        memory = render("context", file=session.reference_memory)
        for turn in session.turns:
            out.append(Question(turn.id, turn.user, memory, FixtureTools(session.tools)))
    return out[:limit]


async def answers(model: Counted, asked: list[Question], max_tokens: int) -> list[str]:
    agent = ChatAgent(model, max_tokens=max_tokens)  # type: ignore[arg-type]
    out = []
    for q in asked:
        result = await agent.respond(
            history=[], user_message=q.message, memory=q.memory, tools=q.tools
        )
        calls = "; ".join(f"{c.name}({c.arguments})" for c in result.tool_calls)
        out.append(f"[{calls}] {result.error or result.answer}")
    return out


def first_difference(a: str, b: str) -> str:
    n = Llama.longest_token_prefix(a, b)  # works on any two sequences, text too
    start = max(0, n - 30)
    return f"warm …{a[start : n + 50]!r}\n    cold …{b[start : n + 50]!r}"


async def main(args: argparse.Namespace) -> None:
    info = lookup(args.model)
    asked = questions(args.scenario, args.questions)
    print(f"machine: {machine()}")
    print(
        f"{args.model}, {len(asked)} questions of {args.scenario} asked alone with their "
        f"session's memory, max {args.max_tokens} tokens per answer, CHUNK {CHUNK}\n",
        flush=True,
    )
    rows = []
    for name in args.engines.split(","):
        engine = {"chunked": lambda: _Engine(info), "any-prefix": lambda: AnyPrefix(info)}[name]()
        engine.ensure_loaded()
        model = LocalModel(info.name)
        model.engine = engine
        warm, cold = Counted(model, cold=False), Counted(model, cold=True)
        engine.forget()
        warm_answers = await answers(warm, asked, args.max_tokens)
        cold_answers = await answers(cold, asked, args.max_tokens)
        same = 0
        for q, a, b in zip(asked, warm_answers, cold_answers, strict=True):
            if a == b:
                same += 1
            else:
                print(f"{name} {q.id}: answers differ\n    {first_difference(a, b)}", flush=True)
        rows.append(
            [name, len(asked), f"{same}/{len(asked)}", warm.calls, f"{warm.seconds:.0f}",
             cold.calls, f"{cold.seconds:.0f}"]
        )  # fmt: skip
    print()
    print(
        table(
            ["engine", "questions", "same answer warm and cold", "warm calls", "warm model s",
             "cold calls", "cold model s"],
            rows,
        )
    )  # fmt: skip
    print(f"machine at the end: {machine()}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="combined")
    parser.add_argument("--questions", type=int, default=12)
    parser.add_argument("--engines", default="chunked,any-prefix")
    parser.add_argument("--max-tokens", type=int, default=160)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    args = parser.parse_args()
    bad = [e for e in args.engines.split(",") if e not in ("chunked", "any-prefix")]
    if bad:
        parser.error(f"unknown engine {bad[0]!r} (valid: chunked, any-prefix)")
    return args


if __name__ == "__main__":
    started = time.perf_counter()
    with model_requests_allowed():
        asyncio.run(main(parse_args()))
    print(f"(benchmark took {time.perf_counter() - started:.0f}s)")
