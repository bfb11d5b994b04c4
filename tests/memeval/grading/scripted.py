"""A scripted judge model for grading tests: answers from a list, raises when it runs out."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from memeval.models.base import ChatResponse, Message


class ScriptedJudge:
    """Each script item is the answer text, an exception to raise, or ("sleep", seconds)."""

    def __init__(self, script: Sequence[Any], name: str = "scripted:judge") -> None:
        self.name = name
        self.script = list(script)
        self.requests: list[list[Message]] = []
        self.schemas: list[Mapping[str, Any] | None] = []

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        schema: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> ChatResponse:
        self.requests.append(list(messages))
        self.schemas.append(schema)
        if not self.script:
            raise AssertionError("the scripted judge ran out of answers")
        item = self.script.pop(0)
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, tuple) and item[0] == "sleep":
            await asyncio.sleep(item[1])
            return ChatResponse(content='{"verdict": "pass", "reason": "late"}')
        return ChatResponse(content=item, prompt_tokens=100, completion_tokens=10, latency_s=0.2)
