"""Model specs: which model serves each role, and building one shared instance per spec.

A spec is `openai:MODEL`, `local:NAME`, `local` (each role's default embedded model) or
`fake`. Precedence per role: --model-ROLE, --model, MEMEVAL_MODEL_<ROLE>, MEMEVAL_MODEL,
then `openai:gpt-4o-mini` when OPENAI_API_KEY or OPENAI_BASE_URL is set, else the local default.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from memeval.errors import ConfigError
from memeval.models import weights
from memeval.models.accounting import price_for
from memeval.models.base import ROLES, ChatModel
from memeval.models.fake import FAKE_LABEL, FAKE_NAME, FakeModel

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
    model: str | None,
    per_role: Mapping[str, str | None] | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """role -> canonical spec for every role in ROLES, following the documented precedence."""
    env = os.environ if env is None else env
    per_role = per_role or {}
    unknown = sorted(set(per_role) - set(ROLES))
    if unknown:
        raise ConfigError(f"unknown model role(s) {', '.join(unknown)}; roles: {', '.join(ROLES)}")
    endpoint = bool(env.get("OPENAI_API_KEY") or env.get("OPENAI_BASE_URL"))
    resolved: dict[str, str] = {}
    for role in ROLES:
        chosen = (
            per_role.get(role)
            or model
            or env.get(f"MEMEVAL_MODEL_{role.upper()}")
            or env.get("MEMEVAL_MODEL")
            or (f"openai:{OPENAI_DEFAULT}" if endpoint else "local")
        )
        parsed = parse_spec(chosen)
        if parsed.backend == "local" and not parsed.model:
            parsed = ModelSpec("local", LOCAL_DEFAULTS[role])
        resolved[role] = str(parsed)
    return resolved


_instances: dict[tuple[str, tuple[tuple[str, Any], ...]], ChatModel] = {}
_instances_lock = threading.Lock()


def build_model(spec: str, **settings: Any) -> ChatModel:
    """The shared ChatModel for `spec` (one per spec and settings, process-wide).

    Configuration problems surface here, before a run starts: a missing OPENAI_API_KEY, a
    missing weights package or a wrong sha256 raise ConfigError.
    """
    parsed = parse_spec(spec)
    if parsed.backend == "local":
        local_threads()  # a bad MEMEVAL_LOCAL_THREADS is a usage error before anything loads
        if not parsed.model:
            parsed = ModelSpec("local", LOCAL_GENERIC)
    key = (str(parsed), tuple(sorted(settings.items())))
    with _instances_lock:
        if key not in _instances:
            _instances[key] = _construct(parsed, settings)
        return _instances[key]


def _construct(spec: ModelSpec, settings: Mapping[str, Any]) -> ChatModel:
    if spec.backend == "fake":
        return FakeModel()
    if spec.backend == "openai":
        from memeval.models.openai import OpenAIModel

        return OpenAIModel(spec.model, **settings)
    try:
        from memeval.models.local import LocalModel
    except ImportError as exc:
        raise ConfigError(
            f"local:{spec.model} needs llama-cpp-python: pip install 'memeval[local]' "
            f"(or scripts/bootstrap) ({exc})"
        ) from exc
    model = LocalModel(spec.model)
    model.prepare()
    return model


def describe(spec: str) -> dict[str, Any]:
    """What run.json records about a spec: back end, exact weights, endpoint (never a key)."""
    parsed = parse_spec(spec)
    if parsed.backend == "fake":
        return {"spec": FAKE_NAME, "backend": "fake", "fake": True, "label": FAKE_LABEL}
    if parsed.backend == "openai":
        base_url = os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        price = price_for(str(parsed))
        return {
            "spec": str(parsed),
            "backend": "openai",
            "model": parsed.model,
            "base_url": base_url,
            "price_usd_per_1m": {"input": price[0], "output": price[1]} if price else None,
        }
    info = weights.lookup(parsed.model or LOCAL_GENERIC)
    try:
        from memeval.models.local import N_CTX
    except ImportError:  # llama-cpp-python missing: describe what we can
        N_CTX = None  # type: ignore[assignment]
    return {
        "spec": f"local:{info.name}",
        "backend": "local",
        "model": info.name,
        "description": info.description,
        "weights_sha256": info.sha256,
        "weights_file": str(weights.cache_dir() / info.filename),
        "weights_packages": f"{info.package}-part1..{info.parts}=={info.version}",
        "n_ctx": N_CTX,
        "threads": local_threads(),
        "llama_cpp_python": _version("llama-cpp-python"),
    }


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None
