"""Models for tests: a script of canned responses, or a function that computes each response.

Both record every request they receive, so a test can assert what the code under test sent.
A script that runs out raises `ScriptExhausted` instead of inventing an answer.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memeval.models.base import ChatResponse, Message, ModelError, ToolChoice


class ScriptExhausted(AssertionError):
    """The code under test made more model calls than the test scripted."""


@dataclass
class Request:
    """One call as a scripted model received it."""

    messages: list[Message]
    tools: list[dict[str, Any]] | None = None
    schema: dict[str, Any] | None = None
    max_tokens: int | None = None
    temperature: float = 0.0
    tool_choice: ToolChoice = "auto"

    @property
    def last_user(self) -> str:
        users = [m for m in self.messages if m.get("role") == "user"]
        return str(users[-1].get("content") or "") if users else ""


Step = Any
"""str | dict | list | ChatResponse | BaseException | callable(messages, tools, schema) -> Step"""


class _Recording:
    name: str

    def __init__(self, name: str) -> None:
        self.name = name
        self.requests: list[Request] = []

    @property
    def calls(self) -> int:
        return len(self.requests)

    def _record(
        self,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]] | None,
        schema: Mapping[str, Any] | None,
        max_tokens: int | None,
        temperature: float,
        tool_choice: ToolChoice = "auto",
    ) -> Request:
        request = Request(
            messages=[dict(m) for m in messages],
            tools=[dict(t) for t in tools] if tools is not None else None,
            schema=dict(schema) if schema is not None else None,
            max_tokens=max_tokens,
            temperature=temperature,
            tool_choice=tool_choice,
        )
        self.requests.append(request)
        return request

    async def _respond(self, step: Step, request: Request) -> ChatResponse:
        """Turn one script step into a response (or raise it), resolving callables first."""
        if callable(step) and not isinstance(step, BaseException | type):
            step = step(request.messages, request.tools, request.schema)
            if inspect.isawaitable(step):
                step = await step
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, ChatResponse):
            if not step.model:
                step.model = self.name
            return step
        if isinstance(step, str):
            return ChatResponse(content=step, model=self.name)
        if isinstance(step, dict | list):
            return ChatResponse(content=json.dumps(step), model=self.name)
        raise ModelError(f"{self.name}: cannot turn a {type(step).__name__} into a response")


class ScriptedModel(_Recording):
    """Returns the scripted steps in order, one per call; raises ScriptExhausted after the last."""

    def __init__(self, steps: Iterable[Step], name: str = "scripted") -> None:
        super().__init__(name)
        self.steps = list(steps)

    @property
    def remaining(self) -> int:
        return len(self.steps) - len(self.requests)

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
        index = len(self.requests)
        request = self._record(messages, tools, schema, max_tokens, temperature, tool_choice)
        if index >= len(self.steps):
            raise ScriptExhausted(
                f"{self.name}: script has {len(self.steps)} step(s) but call #{index + 1} was "
                f"made (last user message: {request.last_user[:80]!r})"
            )
        return await self._respond(self.steps[index], request)


class FunctionModel(_Recording):
    """Computes each response with `fn(messages, tools, schema)` (sync or async)."""

    def __init__(self, fn: Callable[..., Any], name: str = "function") -> None:
        super().__init__(name)
        self.fn = fn

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
        request = self._record(messages, tools, schema, max_tokens, temperature, tool_choice)
        return await self._respond(self.fn, request)
