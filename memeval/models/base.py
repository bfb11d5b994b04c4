"""The one interface every LLM call in memeval goes through."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Message = dict[str, Any]

ToolChoice = Literal["auto", "required", "none"]
TOOL_CHOICES: tuple[ToolChoice, ...] = ("auto", "required", "none")

ROLES = ("agent", "summarizer", "updater", "safety", "compactor", "judge")


class ModelError(Exception):
    """A model call failed for good (after the back end's own retries)."""


class ReplyError(ModelError):
    """An embedded model answered, but its reply cannot be used: a call stopped mid-way (max
    tokens, or repeating itself) or not the form asked for. Such a reply is what the model
    gave, like any answer (not a timeout, a cancellation or a server's error), so the response
    cache keeps it as it keeps answers, and one served from it says `cached`."""

    def __init__(self, message: str, *, cached: bool = False) -> None:
        super().__init__(message)
        self.cached = cached


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass
class ChatResponse:
    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0  # the call's own seconds (an embedded call's queue wait excluded)
    model: str = ""
    cached: bool = False
    cached_prompt_tokens: int = 0  # prompt tokens a prefix (KV) cache served; 0 when unknown


@runtime_checkable
class ChatModel(Protocol):
    """Messages (OpenAI chat format), optional tools (OpenAI function specs), optional JSON
    schema for the answer; returns content or tool calls, usage and latency. With
    `tool_choice="required"` (and tools given) the reply is one or more tool calls, never
    an answer; with "none" it is an answer, never a call, though the tools stay in the
    request (so a prefix cache that holds them keeps serving the call); "auto" leaves the
    choice to the model."""

    name: str  # the spec that built it, e.g. "openai:gpt-4o-mini", "local:qwen2.5-coder-1.5b"

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        schema: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        tool_choice: ToolChoice = "auto",
    ) -> ChatResponse: ...


@dataclass
class CallRecord:
    """Accounting for one call: every call, whoever made it, lands in a run's llm_calls."""

    role: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached: bool = False
    error: str | None = None
    fake: bool = False  # the `fake` stand-in: never reported as a model result
    cost_usd: float | None = None  # None when the price is unknown
    cached_prompt_tokens: int = 0  # of prompt_tokens, served by the back end's prefix cache
