"""The tiny model protocol the pipeline depends on.

`reference_memory` never imports a provider SDK: a host project passes any object with an
async `complete()` that takes chat messages and returns text (JSON text when a schema is
given), with token usage. memeval adapts its own model layer to this protocol.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

Message = dict[str, Any]
"""One OpenAI-style chat message: {"role": ..., "content": ...}."""

ROLES = ("summarizer", "updater", "safety", "compactor")
"""The pipeline's model roles; each may be served by a different model."""


@dataclass
class Completion:
    """What a model returned for one call."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str = ""
    latency_s: float = 0.0
    cached: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class MemoryModel(Protocol):
    """Chat messages in, text out. With `schema`, the text must be JSON valid against it.

    Back ends that support constrained decoding should enforce the schema; the pipeline
    validates the answer either way and treats anything unparseable as a failed call.
    Implementations raise any exception on failure (timeouts, HTTP errors); the pipeline
    records it and never lets it corrupt memory.
    """

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> Completion: ...


ModelsArg = MemoryModel | Mapping[str, MemoryModel]
"""One model for every role, or a mapping role -> model (a "default" key fills gaps)."""


def model_for(models: ModelsArg, role: str) -> MemoryModel:
    """Pick the model serving `role` from a single model or a role mapping."""
    if isinstance(models, Mapping):
        if role in models:
            return models[role]
        if "default" in models:
            return models["default"]
        raise KeyError(f"no model for role {role!r} (roles given: {sorted(models)})")
    return models
