"""Testing the pipeline without a model: a scripted model and helpers to write its script.

For anyone who lifts the pipeline into an agent and tests it there: `ScriptedModel` answers
from a script in order and raises `ScriptExhausted` when it runs out (a call nobody scripted
fails the test instead of getting an invented answer). An answer is a string, an exception to
raise, or a callable taking the request (sync or async) and returning a string. Every request
is kept for assertions. `roles()` gives one scripted model per pipeline role; `ops`, `add`,
`replace`, `ALLOW` and `block` write the updater's and the safety gate's answers.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reference_memory import Completion, Turn

Answer = str | BaseException | Callable[["Request"], Any]


class ScriptExhausted(AssertionError):
    """The pipeline made a call the test did not script."""


@dataclass
class Request:
    messages: list[dict[str, Any]]
    schema: Mapping[str, Any] | None
    max_tokens: int | None

    @property
    def last(self) -> str:
        return str(self.messages[-1]["content"])


class ScriptedModel:
    def __init__(self, answers: Iterable[Answer] = (), name: str = "scripted") -> None:
        self.answers = list(answers)
        self.name = name
        self.requests: list[Request] = []

    async def complete(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        schema: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        request = Request([dict(m) for m in messages], schema, max_tokens)
        self.requests.append(request)
        if not self.answers:
            raise ScriptExhausted(f"{self.name}: unscripted call #{len(self.requests)}")
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        if callable(answer):
            answer = answer(request)
            if inspect.isawaitable(answer):
                answer = await answer
        text = str(answer)
        return Completion(
            text=text,
            prompt_tokens=len(str(messages)) // 4,
            completion_tokens=len(text) // 4,
            model=self.name,
        )


def roles(
    summarizer: Iterable[Answer] = (),
    updater: Iterable[Answer] = (),
    safety: Iterable[Answer] = (),
    compactor: Iterable[Answer] = (),
) -> dict[str, ScriptedModel]:
    """One scripted model per pipeline role."""
    return {
        "summarizer": ScriptedModel(summarizer, "summarizer-model"),
        "updater": ScriptedModel(updater, "updater-model"),
        "safety": ScriptedModel(safety, "safety-model"),
        "compactor": ScriptedModel(compactor, "compactor-model"),
    }


def ops(*items: Mapping[str, str]) -> str:
    """The updater's answer proposing these edit ops."""
    return json.dumps({"ops": list(items)})


def add(anchor: str, text: str) -> dict[str, str]:
    """An `add` op: `text` goes in after the line `anchor` ends on."""
    return {"op": "add", "anchor": anchor, "text": text}


def replace(old: str, new: str) -> dict[str, str]:
    """A `replace` op (`new` = "" deletes)."""
    return {"op": "replace", "old": old, "new": new}


ALLOW = json.dumps({"verdict": "allow", "reason": "ordinary fact"})


def block(reason: str = "instruction aimed at the assistant") -> str:
    """The safety gate's answer blocking a piece of new text."""
    return json.dumps({"verdict": "block", "reason": reason})


def turn(user: str = "Datasets should always have exactly 70 rows.", reply: str = "Noted.") -> Turn:
    """A completed turn: the user's message, a tool call with its result, and a reply."""
    return Turn(
        messages=[
            {"role": "user", "content": user},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "create_dataset", "arguments": '{"rows": 70}'},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "c1",
                "name": "create_dataset",
                "content": '{"dataset": "agent-prod-sample"}',
            },
            {"role": "assistant", "content": reply},
        ]
    )
