"""Composing each role's model for one scenario repeat:
back end (shared) -> response cache -> tracing -> accounting (into the unit's call sink)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from memeval.models.accounting import CallSink, RecordingModel
from memeval.models.adapter import as_memory_model
from memeval.models.base import ChatModel
from memeval.models.cache import CachedModel, ResponseCache
from memeval.models.registry import build_model
from memeval.models.spec import ModelSpec
from memeval.models.traced import TracedModel
from memeval.models.weights import cache_root
from reference_memory.model import ROLES as PIPELINE_ROLES
from reference_memory.model import MemoryModel


class ModelPool:
    """One back-end instance per spec for the whole run (a loaded local model is shared)."""

    def __init__(
        self,
        specs: Mapping[str, ModelSpec],
        cache_path: Path | None,
        given: Mapping[str, ChatModel] | None = None,
    ) -> None:
        self.specs = dict(specs)
        self.cache = ResponseCache(cache_path) if cache_path else None
        self.given = dict(given or {})  # role -> a ready instance (tests, library callers)
        self._instances: dict[ModelSpec, ChatModel] = {}

    def backend(self, role: str) -> ChatModel:
        if role in self.given:
            return self.given[role]
        spec = self.specs[role]
        if spec not in self._instances:
            self._instances[spec] = build_model(spec)
        return self._instances[spec]

    def for_unit(
        self, roles: Iterable[str], repeat: int, sink: CallSink, tracing: Any
    ) -> dict[str, ChatModel]:
        models: dict[str, ChatModel] = {}
        for role in roles:
            model = self.backend(role)
            fake = role not in self.given and self.specs[role].is_fake
            if self.cache is not None and not fake and role not in self.given:
                model = CachedModel(model, self.cache, repeat_index=repeat)
            model = TracedModel(model, role, tracing)
            models[role] = RecordingModel(model, role, sink)
        return models

    def capabilities(self) -> dict[str, dict[str, Any]]:
        """Per role, what its back end learned about its server during the run (the
        response-format mode it probed, prompt tools, estimated usage): run.json keeps it."""
        out: dict[str, dict[str, Any]] = {}
        for role, spec in self.specs.items():
            instance = self._instances.get(spec)
            learned = getattr(instance, "capabilities", None)
            if callable(learned):
                out[role] = learned()
        return out

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()


def cache_path() -> Path:
    """The response cache's file in memeval's cache directory (weights.cache_root)."""
    return cache_root() / "responses.sqlite"


def memory_models(chat_models: Mapping[str, ChatModel]) -> dict[str, MemoryModel]:
    """The pipeline's roles seen through reference_memory's own protocol."""
    return {role: as_memory_model(chat_models[role]) for role in PIPELINE_ROLES}
