"""Where an embedded call's seconds go: every step of the local back end timed, per role.

Runs the first sessions of a bundled scenario on the embedded defaults with the response cache
off, and times each step the local engine takes for every call: rendering the chat template,
tokenizing, restoring the longest cached prefix state, building the grammar, llama.cpp's own
prompt evaluation and token generation (its perf counters), saving the prefix state, and the
rest (sampling with the grammar, detokenizing, Python). Then the floor: the tokens each role
had to evaluate and generate divided by the tokens/s llama.cpp measured, against the wall
time per call. Nothing in memeval is changed: the steps are wrapped from outside.

    .venv/bin/python benchmarks/profile_embedded.py [--scenario book-summary] [--sessions 3]

A combined scenario cannot be cut this way (its `order` must list every included session):
profile one of the scenarios it interleaves.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from _common import ROOT, machine, table

STEPS = ("template", "tokenize", "prefix restore", "grammar", "prompt eval", "generate",
         "state save", "other")  # fmt: skip


@dataclass
class Profile:
    calls: int = 0
    wall: float = 0.0
    steps: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    prompt_tokens: int = 0
    evaluated: int = 0  # prompt tokens llama.cpp evaluated (not served by a restored prefix)
    generated: int = 0


class Recorder:
    """Collects step times per role; the role of the call in flight comes from chat()."""

    def __init__(self) -> None:
        self.role = "?"
        self.by_role: dict[str, Profile] = defaultdict(Profile)
        self.current: dict[str, float] = {}

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.current[name] = self.current.get(name, 0.0) + time.perf_counter() - started

    def timed(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.step(name):
                return fn(*args, **kwargs)

        return wrapper


def install(recorder: Recorder) -> None:
    """Wrap the local back end's steps (the engine's methods and the llama.cpp calls it makes)."""
    import llama_cpp
    from llama_cpp import LlamaGrammar

    from memeval.models import accounting, local

    chat = accounting.RecordingModel.chat

    async def chat_with_role(self: Any, *args: Any, **kwargs: Any) -> Any:
        recorder.role = self.role  # calls are serial on one unit: the next engine call is ours
        return await chat(self, *args, **kwargs)

    accounting.RecordingModel.chat = chat_with_role  # type: ignore[method-assign]
    grammar = LlamaGrammar.from_string.__func__  # type: ignore[attr-defined]
    LlamaGrammar.from_string = classmethod(  # type: ignore[method-assign,assignment]
        lambda cls, *a, **k: recorder.timed("grammar", grammar)(cls, *a, **k)
    )
    local._slim_state = recorder.timed("state save", local._slim_state)
    restore = local._Engine._restore_longest_prefix
    local._Engine._restore_longest_prefix = (  # type: ignore[method-assign]
        lambda self, tokens: recorder.timed("prefix restore", restore)(self, tokens)
    )
    complete = local._Engine.complete

    def profiled(self: Any, messages: Any, grammar: Any, **kwargs: Any) -> Any:
        if self._llama is None:
            self._load()
        llama = self._llama
        formatter, tokenize, create = self._formatter, llama.tokenize, llama.create_completion
        self._formatter = recorder.timed("template", formatter)
        llama.tokenize = recorder.timed("tokenize", tokenize)

        def create_completion(*args: Any, **kw: Any) -> Any:
            ctx = llama._ctx.ctx
            llama_cpp.llama_perf_context_reset(ctx)
            with recorder.step("llama"):
                result = create(*args, **kw)
            perf = llama_cpp.llama_perf_context(ctx)
            recorder.current["prompt eval"] = perf.t_p_eval_ms / 1000
            recorder.current["generate"] = perf.t_eval_ms / 1000
            recorder.current["n_p_eval"] = perf.n_p_eval
            recorder.current["n_eval"] = perf.n_eval
            return result

        llama.create_completion = create_completion
        recorder.current = {}
        started = time.perf_counter()
        try:
            result = complete(self, messages, grammar, **kwargs)
        finally:
            self._formatter = formatter
            llama.tokenize, llama.create_completion = tokenize, create
        wall = time.perf_counter() - started
        _account(recorder, wall, result)
        return result

    local._Engine.complete = profiled  # type: ignore[method-assign,assignment]


def _account(recorder: Recorder, wall: float, result: dict[str, Any]) -> None:
    cur = recorder.current
    prof = recorder.by_role[recorder.role]
    prof.calls += 1
    prof.wall += wall
    # llama.cpp's create_completion: its decode time is prompt eval + generate; what is left
    # inside it (sampling with the grammar, detokenizing, Python) joins the other remainder
    named = sum(cur.get(s, 0.0) for s in STEPS if s != "other")
    for step in STEPS[:-1]:
        prof.steps[step] += cur.get(step, 0.0)
    prof.steps["other"] += max(wall - named, 0.0)
    usage = result.get("usage") or {}
    prof.prompt_tokens += int(usage.get("prompt_tokens", 0))
    prof.evaluated += int(cur.get("n_p_eval", 0))
    prof.generated += int(cur.get("n_eval", 0))


def short_scenario(name: str, sessions: int, into: Path) -> Path:
    """A copy of the bundled scenarios where `name` keeps only its first `sessions` sessions."""
    shutil.copytree(ROOT / "scenarios", into, dirs_exist_ok=True)
    path = into / f"{name}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if data.get("order"):
        raise SystemExit(
            f"--scenario {name} is a combined scenario, which cannot keep only its first "
            "sessions; pass one of the scenarios it interleaves (e.g. book-summary)"
        )
    data["sessions"] = data["sessions"][:sessions]
    kept = {str(turn.get("id")) for s in data["sessions"] for turn in s.get("turns") or []}
    for fact in (data.get("facts") or {}).values():
        if isinstance(fact, dict) and fact.get("until") not in (None, *kept):
            del fact["until"]  # superseded in a session cut off: held to the end here
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="book-summary")
    parser.add_argument("--sessions", type=int, default=3, help="first N sessions only")
    args = parser.parse_args()

    from memeval.runner import RunOptions, run

    recorder = Recorder()
    install(recorder)
    with tempfile.TemporaryDirectory() as tmp:
        scenario = short_scenario(args.scenario, args.sessions, Path(tmp) / "scenarios")
        started = time.perf_counter()
        outcome = run(
            RunOptions(
                targets=[str(scenario)],
                out=Path(tmp) / "reports",
                cache=False,
                progress=False,
            )
        )
        wall = time.perf_counter() - started
        turns = len(outcome.info.scenarios[args.scenario].turn_ids())

    print(f"machine: {machine()}")
    print(f"{args.scenario}, first {args.sessions} sessions: {turns} turns, {wall:.0f} s wall\n")
    rows = []
    for role, prof in sorted(recorder.by_role.items(), key=lambda kv: -kv[1].wall):
        rows.append(
            [role, prof.calls, prof.wall, prof.wall / prof.calls]
            + [prof.steps[s] / prof.calls for s in STEPS]
        )
    print("seconds per call, by step")
    print(table(["role", "calls", "total s", "per call", *STEPS], rows))

    eval_s = sum(p.steps["prompt eval"] for p in recorder.by_role.values())
    gen_s = sum(p.steps["generate"] for p in recorder.by_role.values())
    evaluated = sum(p.evaluated for p in recorder.by_role.values())
    generated = sum(p.generated for p in recorder.by_role.values())
    eval_rate = evaluated / eval_s if eval_s else 0.0
    gen_rate = generated / gen_s if gen_s else 0.0
    print(
        f"\nllama.cpp measured: prompt eval {eval_rate:.0f} tok/s, generation {gen_rate:.1f} tok/s"
    )
    floor_rows = []
    for role, prof in sorted(recorder.by_role.items(), key=lambda kv: -kv[1].wall):
        floor = (prof.evaluated / eval_rate if eval_rate else 0) + (
            prof.generated / gen_rate if gen_rate else 0
        )
        floor_rows.append(
            [
                role,
                prof.prompt_tokens / prof.calls,
                prof.evaluated / prof.calls,
                prof.generated / prof.calls,
                floor / prof.calls,
                prof.wall / prof.calls,
                f"{prof.wall / floor:.2f}x" if floor else "-",
            ]
        )
    print("the floor: tokens that must be evaluated and generated at those rates, per call")
    print(
        table(
            ["role", "prompt tok", "evaluated", "generated", "floor s", "wall s", "wall/floor"],
            floor_rows,
        )
    )


if __name__ == "__main__":
    main()
