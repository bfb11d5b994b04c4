"""OpenInference attribute builders: chat messages, tool calls and values as flat span attributes.

Span attributes must be primitives, so messages are flattened the OpenInference way
(`llm.input_messages.3.message.tool_calls.0.tool_call.function.name`) and structured values
are JSON strings. Nothing here truncates: the tracer's limits are raised instead.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from openinference.semconv.trace import (
    MessageAttributes,
    OpenInferenceMimeTypeValues,
    OpenInferenceSpanKindValues,
    SpanAttributes,
    ToolAttributes,
    ToolCallAttributes,
)

Attributes = dict[str, str | int | float | bool]

KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
LLM = OpenInferenceSpanKindValues.LLM.value
CHAIN = OpenInferenceSpanKindValues.CHAIN.value
AGENT = OpenInferenceSpanKindValues.AGENT.value
TOOL = OpenInferenceSpanKindValues.TOOL.value
RETRIEVER = OpenInferenceSpanKindValues.RETRIEVER.value
GUARDRAIL = OpenInferenceSpanKindValues.GUARDRAIL.value
EVALUATOR = OpenInferenceSpanKindValues.EVALUATOR.value
JSON_MIME = OpenInferenceMimeTypeValues.JSON.value
TEXT_MIME = OpenInferenceMimeTypeValues.TEXT.value


def to_json(value: Any) -> str:
    """JSON for an attribute; anything json cannot encode becomes its str()."""
    return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)


def io_value(prefix: str, value: Any) -> Attributes:
    """`input.value`/`output.value` with its mime type: text stays text, the rest is JSON."""
    if value is None:
        return {}
    if isinstance(value, str):
        return {f"{prefix}.value": value, f"{prefix}.mime_type": TEXT_MIME}
    return {f"{prefix}.value": to_json(value), f"{prefix}.mime_type": JSON_MIME}


def message_attributes(prefix: str, messages: Iterable[Mapping[str, Any]]) -> Attributes:
    """Flatten OpenAI-format messages under `prefix` (llm.input_messages / llm.output_messages)."""
    attrs: Attributes = {}
    for i, message in enumerate(messages):
        base = f"{prefix}.{i}."
        attrs[base + MessageAttributes.MESSAGE_ROLE] = str(message.get("role") or "")
        content = message.get("content")
        if content is not None:
            attrs[base + MessageAttributes.MESSAGE_CONTENT] = (
                content if isinstance(content, str) else to_json(content)
            )
        if message.get("name"):
            attrs[base + MessageAttributes.MESSAGE_NAME] = str(message["name"])
        if message.get("tool_call_id"):
            attrs[base + MessageAttributes.MESSAGE_TOOL_CALL_ID] = str(message["tool_call_id"])
        for j, call in enumerate(message.get("tool_calls") or []):
            attrs.update(_tool_call(f"{base}{MessageAttributes.MESSAGE_TOOL_CALLS}.{j}.", call))
    return attrs


def _tool_call(base: str, call: Any) -> Attributes:
    """One tool call, from an OpenAI dict ({"id", "function": {...}}) or a ToolCall object."""
    if isinstance(call, Mapping):
        fn = call.get("function") or {}
        call_id, name, arguments = call.get("id"), fn.get("name"), fn.get("arguments")
    else:
        call_id = getattr(call, "id", None)
        name = getattr(call, "name", None)
        arguments = getattr(call, "arguments", None)
    attrs: Attributes = {base + ToolCallAttributes.TOOL_CALL_FUNCTION_NAME: str(name or "")}
    if call_id:
        attrs[base + ToolCallAttributes.TOOL_CALL_ID] = str(call_id)
    if arguments is not None:
        attrs[base + ToolCallAttributes.TOOL_CALL_FUNCTION_ARGUMENTS_JSON] = (
            arguments if isinstance(arguments, str) else to_json(arguments)
        )
    return attrs


def tools_attributes(tools: Sequence[Mapping[str, Any]] | None) -> Attributes:
    """`llm.tools.N.tool.json_schema`: the function specs offered to the model."""
    return {
        f"{SpanAttributes.LLM_TOOLS}.{i}.{ToolAttributes.TOOL_JSON_SCHEMA}": to_json(tool)
        for i, tool in enumerate(tools or [])
    }


def last_content(messages: Sequence[Mapping[str, Any]]) -> str:
    """The last message's text: what a span list should show as this call's input."""
    for message in reversed(messages):
        content = message.get("content")
        if content:
            return content if isinstance(content, str) else to_json(content)
    return ""
