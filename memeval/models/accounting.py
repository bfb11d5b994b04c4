"""Accounting: one CallRecord per model call (failed ones too) and an honest cost estimate.

Prices are OpenAI's published standard-tier list prices in USD per 1M tokens (input, output),
checked 2025-2026. A model not in the table gets no estimate (None), never a guess; a cached
call made no request, so it costs 0; the embedded model and `fake` have no USD price.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

from memeval.models.base import CallRecord, ChatModel, ChatResponse, Message, ToolChoice
from memeval.models.fake import FAKE_NAME

PRICES_PER_1M: dict[str, tuple[float, float]] = {
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-2025-04-14": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-mini-2025-04-14": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4.1-nano-2025-04-14": (0.10, 0.40),
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-2024-08-06": (2.50, 10.00),
    "gpt-4o-2024-11-20": (2.50, 10.00),
    "gpt-4o-2024-05-13": (5.00, 15.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o-mini-2024-07-18": (0.15, 0.60),
    "o1": (15.00, 60.00),
    "o3": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
    "gpt-4-turbo": (10.00, 30.00),
    "gpt-3.5-turbo": (0.50, 1.50),
}


def price_for(spec: str) -> tuple[float, float] | None:
    """(input, output) USD per 1M tokens for an `openai:MODEL` spec; None when unknown."""
    backend, _, model = spec.partition(":")
    if backend != "openai":
        return None
    return PRICES_PER_1M.get(model.strip().lower())


def estimate_cost(
    spec: str, prompt_tokens: int, completion_tokens: int, cached: bool = False
) -> float | None:
    """USD for one call, or None when the model's price is not known."""
    price = price_for(spec)
    if price is None:
        return None
    if cached:
        return 0.0
    return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000


def total_cost(records: Sequence[CallRecord]) -> float | None:
    """Sum of known costs; None if any call's cost is unknown (a partial sum would mislead)."""
    costs = [r.cost_usd for r in records]
    if not costs or any(c is None for c in costs):
        return None
    return sum(c for c in costs if c is not None)


class CallSink(Protocol):
    """Where RecordingModel puts each CallRecord (a plain list will do)."""

    def append(self, record: CallRecord, /) -> None: ...


class TurnCalls:
    """A scenario repeat's call sink that files each call under the turn that made it.

    `turn()` sets the turn's own list in a context variable; an update task started inside it
    inherits that context, so calls of an update still running when the next turn has begun
    (`--async-memory`) count for their own turn, not for whichever turn is current.
    """

    def __init__(self) -> None:
        self._current: ContextVar[list[CallRecord] | None] = ContextVar(
            f"memeval-turn-calls-{id(self)}", default=None
        )
        self.outside: list[CallRecord] = []  # calls made outside any turn (none expected)

    def append(self, record: CallRecord, /) -> None:
        current = self._current.get()
        (self.outside if current is None else current).append(record)

    @contextmanager
    def turn(self) -> Iterator[list[CallRecord]]:
        calls: list[CallRecord] = []
        token = self._current.set(calls)
        try:
            yield calls
        finally:
            self._current.reset(token)


class RecordingModel:
    """Wraps a model for one role and appends a CallRecord to `sink` for every call.

    A failed call is recorded with its error and then re-raised: the caller decides what a
    failure means, accounting only makes sure it is never silent.
    """

    def __init__(self, inner: ChatModel, role: str, sink: CallSink) -> None:
        self.inner = inner
        self.role = role
        self.sink = sink
        self.name = inner.name

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
        started = time.perf_counter()
        fake = self.name == FAKE_NAME
        try:
            response = await self.inner.chat(
                messages,
                tools=tools,
                schema=schema,
                max_tokens=max_tokens,
                temperature=temperature,
                tool_choice=tool_choice,
            )
        except BaseException as exc:
            self.sink.append(
                CallRecord(
                    role=self.role,
                    model=self.name,
                    latency_s=time.perf_counter() - started,
                    error=f"{type(exc).__name__}: {exc}"[:500],
                    cached=bool(getattr(exc, "cached", False)),  # a cached ReplyError
                    fake=fake,
                )
            )
            raise
        self.sink.append(
            CallRecord(
                role=self.role,
                model=self.name,
                prompt_tokens=response.prompt_tokens,
                completion_tokens=response.completion_tokens,
                latency_s=response.latency_s or (time.perf_counter() - started),
                cached=response.cached,
                cached_prompt_tokens=response.cached_prompt_tokens,
                fake=fake,
                cost_usd=estimate_cost(
                    self.name, response.prompt_tokens, response.completion_tokens, response.cached
                ),
            )
        )
        return response
