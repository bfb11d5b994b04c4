"""TracedModel: any ChatModel, with one OpenInference LLM span per call.

Tracing wraps the model layer instead of living inside providers. Safety calls sit in a
GUARDRAIL span and judge calls in an EVALUATOR span around the LLM span: the step keeps its
meaning in Phoenix while the LLM span keeps the token counts Phoenix only sums for LLM spans.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from openinference.semconv.trace import SpanAttributes as SA

from memeval.models.base import ChatModel, ChatResponse, Message, ToolChoice
from memeval.tracing.attributes import (
    EVALUATOR,
    GUARDRAIL,
    LLM,
    Attributes,
    io_value,
    last_content,
    message_attributes,
    to_json,
    tools_attributes,
)

if TYPE_CHECKING:
    from memeval.tracing.spans import Tracing

WRAPPER_KIND = {"safety": GUARDRAIL, "judge": EVALUATOR}


class TracedModel:
    """A ChatModel that records every call made through it; answers pass through unchanged."""

    def __init__(self, inner: ChatModel, role: str, tracing: Tracing) -> None:
        self.inner = inner
        self.role = role
        self.tracing = tracing
        self.name = inner.name

    def __getattr__(self, attr: str) -> Any:
        # Optional extras of the wrapped model (close(), info...) stay reachable.
        if attr == "inner":
            raise AttributeError(attr)
        return getattr(self.inner, attr)

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
        call = functools.partial(
            self.inner.chat,
            messages,
            tools=tools,
            schema=schema,
            max_tokens=max_tokens,
            temperature=temperature,
            tool_choice=tool_choice,
        )
        if not self.tracing.enabled:  # nothing records: skip flattening the messages
            return await call()
        request = request_attributes(self.inner.name, self.role, messages, tools, schema)
        request[SA.LLM_INVOCATION_PARAMETERS] = to_json(
            _parameters(max_tokens, temperature, schema, tool_choice)
        )
        with (
            self._step(messages) as step,
            self.tracing.span(f"llm.{self.role}", LLM, request) as span,
        ):
            response = await call()
            span.set_attributes(response_attributes(response))
            if step is not None:
                step.set_attributes(io_value("output", response.content or ""))
            return response

    @contextlib.contextmanager
    def _step(self, messages: Sequence[Message]) -> Iterator[Any]:
        kind = WRAPPER_KIND.get(self.role)
        if kind is None:
            yield None
            return
        attrs = {"memeval.role": self.role, **io_value("input", last_content(messages))}
        with self.tracing.span(self.role, kind, attrs) as span:
            yield span


def request_attributes(
    name: str,
    role: str,
    messages: Sequence[Message],
    tools: Sequence[Mapping[str, Any]] | None,
    schema: Mapping[str, Any] | None,
) -> Attributes:
    attrs: Attributes = {
        SA.LLM_MODEL_NAME: name,
        "memeval.role": role,
        "memeval.model_spec": name,
        **io_value("input", last_content(messages)),
        **message_attributes(SA.LLM_INPUT_MESSAGES, messages),
        **tools_attributes(tools),
    }
    if name.startswith("openai:"):
        attrs[SA.LLM_PROVIDER] = "openai"
    if schema is not None:
        attrs["memeval.json_schema"] = to_json(schema)
    return attrs


def _parameters(
    max_tokens: int | None,
    temperature: float,
    schema: Mapping[str, Any] | None,
    tool_choice: ToolChoice = "auto",
) -> dict[str, Any]:
    params: dict[str, Any] = {"temperature": temperature}
    if tool_choice != "auto":
        params["tool_choice"] = tool_choice
    if max_tokens is not None:
        params["max_tokens"] = max_tokens
    if schema is not None:
        params["response_format"] = {"type": "json_schema", "json_schema": {"schema": schema}}
    return params


def response_attributes(response: ChatResponse) -> Attributes:
    output: dict[str, Any] = {"role": "assistant", "content": response.content}
    if response.tool_calls:
        output["tool_calls"] = response.tool_calls
    attrs: Attributes = {
        SA.LLM_TOKEN_COUNT_PROMPT: response.prompt_tokens,
        SA.LLM_TOKEN_COUNT_COMPLETION: response.completion_tokens,
        SA.LLM_TOKEN_COUNT_TOTAL: response.prompt_tokens + response.completion_tokens,
        "memeval.cached": response.cached,
        "memeval.latency_s": response.latency_s,
        **message_attributes(SA.LLM_OUTPUT_MESSAGES, [output]),
    }
    if response.model:
        attrs[SA.LLM_MODEL_NAME] = response.model
    if response.tool_calls:
        calls = [
            {"name": c.name, "arguments": c.arguments, "id": c.id} for c in response.tool_calls
        ]
        attrs.update(io_value("output", {"content": response.content, "tool_calls": calls}))
    else:
        attrs.update(io_value("output", response.content or ""))
    return attrs
