"""Seeing a memeval ChatModel through reference_memory's own tiny MemoryModel protocol."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memeval.models.base import ChatModel
from reference_memory.model import Completion, MemoryModel, Message


class MemoryModelAdapter:
    """complete() -> Completion with the text (JSON text under a schema), usage and timing."""

    def __init__(self, chat_model: ChatModel) -> None:
        self.chat_model = chat_model
        self.name = chat_model.name

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        response = await self.chat_model.chat(messages, schema=schema, max_tokens=max_tokens)
        return Completion(
            text=response.content or "",
            prompt_tokens=response.prompt_tokens,
            completion_tokens=response.completion_tokens,
            model=response.model or self.name,
            latency_s=response.latency_s,
            cached=response.cached,
        )


def as_memory_model(chat_model: ChatModel) -> MemoryModel:
    return MemoryModelAdapter(chat_model)
