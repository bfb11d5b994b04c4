"""One eval session's questions asked of the built-in agent with the memory held fixed, once per
variant of that memory: does a change of the file's bytes alone change what the agent says?

Each variant starts a fresh agent and history and asks the session's questions in order, with
the memory rendered as a run renders it (`context.j2`) and the session's fixture tools; the
memory does not change between questions. Variant `as-is` is the file given; `--drop LINE`
adds a variant without every line equal to LINE (repeatable: one variant per LINE).

    .venv/bin/python benchmarks/fixed_memory.py reports/<run>/snapshots/combined/r0/0030-….md \\
        agent-traces/s2 [--scenario combined] [--model local:qwen2.5-coder-1.5b] \\
        [--drop "### agent-prod"]

Prints one line per answer: variant, turn, words, tool calls, the answer's start.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import machine
from memeval.agent import ChatAgent
from memeval.models.base import Message
from memeval.models.guard import model_requests_allowed
from memeval.models.registry import build_model
from memeval.models.spec import parse_spec
from memeval.scenario.loader import resolve
from memeval.tools import FixtureTools
from reference_memory.templates import render


def _fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def variants(file: str, drops: list[str]) -> dict[str, str]:
    out = {"as-is": file}
    for line in drops:
        kept = [kept for kept in file.splitlines(keepends=True) if kept.rstrip("\n") != line]
        if len(kept) == len(file.splitlines()):
            _fail(f"--drop {line!r} is no line of the file; give a whole line of it")
        out[f"without {line!r}"] = "".join(kept)
    return out


async def main(args: argparse.Namespace) -> None:
    scenario = resolve(args.scenario)
    sessions = {s.id: s for s in scenario.sessions}
    if args.session not in sessions:
        _fail(f"no session {args.session!r}; sessions: {', '.join(sessions)}")
    session = sessions[args.session]
    print(machine(), flush=True)
    model = build_model(parse_spec(args.model))
    file = Path(args.memory).read_text(encoding="utf-8")
    for name, memory in variants(file, args.drop).items():
        agent = ChatAgent(model)
        history: list[Message] = []
        for turn in session.turns:
            result = await agent.respond(
                history=history,
                user_message=turn.user,
                memory=render("context", file=memory),
                tools=FixtureTools(session.tools),
            )
            history = [*history, *result.messages]
            calls = [f"{c.name}({c.arguments})" for c in result.tool_calls]
            answer = result.error or result.answer
            print(
                f"[{name}] {turn.id}: {len(answer.split())} words, calls {calls}: {answer[:200]!r}",
                flush=True,
            )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("memory", help="a memory file, e.g. a run's snapshot")
    parser.add_argument("session", help="an eval session id, e.g. agent-traces/s2")
    parser.add_argument("--scenario", default="combined")
    parser.add_argument("--model", default="local:qwen2.5-coder-1.5b")
    parser.add_argument("--drop", action="append", default=[], help="a line to leave out")
    return parser.parse_args()


if __name__ == "__main__":
    with model_requests_allowed():
        asyncio.run(main(parse_args()))
