"""Model specs: what `openai:MODEL`, `local:NAME`, `local` and `fake` mean, and which spec
serves each role.

A spec is parsed once, where options are read, and travels as a `ModelSpec` from there.
Precedence per role: --model-ROLE, --model, MEMEVAL_MODEL_<ROLE>, MEMEVAL_MODEL, then
`openai:gpt-4o-mini` when OPENAI_API_KEY or OPENAI_BASE_URL is set, else the local default.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from memeval.errors import ConfigError
from memeval.models import weights
from memeval.models.base import ROLES

OPENAI_DEFAULT = "gpt-4o-mini"

# Chosen from measurements on a 2-core machine (README "Choosing the local models"):
# the 1.5B model is right far more often in every role, and the machine can afford it.
LOCAL_DEFAULTS: dict[str, str] = {
    "agent": "qwen2.5-coder-1.5b",
    "summarizer": "qwen2.5-coder-1.5b",
    "updater": "qwen2.5-coder-1.5b",
    "safety": "qwen2.5-coder-1.5b",
    "compactor": "qwen2.5-coder-1.5b",
    "judge": "qwen2.5-coder-1.5b",
}
LOCAL_GENERIC = "qwen2.5-coder-1.5b"  # what a bare `local` means outside a role
THREADS_ENV = "MEMEVAL_LOCAL_THREADS"


def local_threads() -> int:
    """CPU threads for the embedded model: MEMEVAL_LOCAL_THREADS, else the CPUs this process may
    use. Set it to 1 per job when two jobs share a small machine (llama.cpp threads spin)."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    if not raw:
        return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"{THREADS_ENV}={raw!r} is not a thread count (valid: an integer >= 1)")
    return int(raw)


@dataclass(frozen=True)
class ModelSpec:
    backend: str  # "openai" | "local" | "fake"
    model: str  # the OpenAI model name or the canonical local name; "" for fake / bare local

    def __str__(self) -> str:
        return self.backend if not self.model else f"{self.backend}:{self.model}"

    @property
    def is_fake(self) -> bool:
        return self.backend == "fake"

    @property
    def local_name(self) -> str | None:
        """The embedded model's name for `local:NAME`; None for any other back end."""
        return self.model if self.backend == "local" and self.model else None


def _valid_forms() -> str:
    return (
        "valid: openai:MODEL (e.g. openai:gpt-4o-mini), local, local:NAME "
        f"(NAME: {', '.join(weights.known_names())}), fake"
    )


def parse_spec(spec: str) -> ModelSpec:
    """Validate a spec; local aliases become canonical names. ConfigError lists valid forms."""
    text = (spec or "").strip()
    backend, sep, rest = text.partition(":")
    backend, rest = backend.strip().lower(), rest.strip()
    if backend == "fake" and not sep:
        return ModelSpec("fake", "")
    if backend == "local" and not sep:
        return ModelSpec("local", "")
    if backend == "local" and rest:
        return ModelSpec("local", weights.lookup(rest).name)
    if backend == "openai" and rest:
        return ModelSpec("openai", rest)
    raise ConfigError(f"invalid model spec {spec!r}; {_valid_forms()}")


def resolve_specs(
    model: ModelSpec | None,
    per_role: Mapping[str, ModelSpec | None] | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, ModelSpec]:
    """role -> canonical spec for every role in ROLES, following the documented precedence
    (the environment's specs are parsed here; the options' were parsed by the caller)."""
    env = os.environ if env is None else env
    per_role = per_role or {}
    unknown = sorted(set(per_role) - set(ROLES))
    if unknown:
        raise ConfigError(f"unknown model role(s) {', '.join(unknown)}; roles: {', '.join(ROLES)}")
    endpoint = bool(env.get("OPENAI_API_KEY") or env.get("OPENAI_BASE_URL"))
    resolved: dict[str, ModelSpec] = {}
    for role in ROLES:
        parsed = (
            per_role.get(role)
            or model
            or parse_spec(
                env.get(f"MEMEVAL_MODEL_{role.upper()}")
                or env.get("MEMEVAL_MODEL")
                or (f"openai:{OPENAI_DEFAULT}" if endpoint else "local")
            )
        )
        if parsed.backend == "local" and not parsed.model:
            parsed = ModelSpec("local", LOCAL_DEFAULTS[role])
        resolved[role] = parsed
    return resolved
