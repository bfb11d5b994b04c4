"""`fake`: a deterministic, instant stand-in for a model. It is NOT a model.

For smoke runs and overhead benchmarks: every call returns at once with a schema-valid answer
(or a plain text reply), so the whole harness runs without weights or endpoints. Its name is
"fake" everywhere it is recorded, and accounting marks its calls `fake=True`.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from memeval.models.base import ChatResponse, Message, ToolCall, ToolChoice
from memeval.models.synth import synthesize

FAKE_NAME = "fake"
FAKE_LABEL = "fake: not a model (deterministic stand-in; results are not model results)"


class FakeModel:
    """Answers every request instantly and deterministically. It calls a tool only when the
    request requires one (`tool_choice="required"`): the first tool, with arguments built
    from its parameter schema."""

    name = FAKE_NAME

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
        digest = _digest(messages)
        if tools and tool_choice == "required":
            function = tools[0].get("function", tools[0])
            parameters = function.get("parameters") or {"type": "object"}
            call = ToolCall(
                id=f"fake-{digest}",
                name=str(function["name"]),
                arguments=synthesize(parameters, text=f"fake-{digest}"),
            )
            return ChatResponse(
                content=None,
                tool_calls=[call],
                latency_s=time.perf_counter() - started,
                model=FAKE_NAME,
            )
        if schema is not None:
            content = json.dumps(synthesize(schema, text=f"fake-{digest}"), ensure_ascii=False)
        else:
            content = f"[fake reply {digest}] This is not a model answer."
        return ChatResponse(
            content=content,
            # No tokens were processed: zero usage, rather than an invented estimate.
            latency_s=time.perf_counter() - started,
            model=FAKE_NAME,
        )


def _digest(messages: Sequence[Message]) -> str:
    """A short stable tag of the request, so different prompts get different fake text."""
    blob = json.dumps(list(messages), sort_keys=True, default=str).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:8]
