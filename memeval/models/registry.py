"""Building models: one shared instance per spec and settings, and what run.json records
about each (back end, exact weights, endpoint; never a key)."""

from __future__ import annotations

import os
import platform
import threading
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from memeval.errors import ConfigError
from memeval.models import weights
from memeval.models.accounting import price_for
from memeval.models.base import ChatModel
from memeval.models.fake import FAKE_LABEL, FAKE_NAME, FakeModel
from memeval.models.spec import LOCAL_GENERIC, ModelSpec, local_threads

_instances: dict[tuple[str, tuple[tuple[str, Any], ...]], ChatModel] = {}
_instances_lock = threading.Lock()


def build_model(spec: ModelSpec, **settings: Any) -> ChatModel:
    """The shared ChatModel for `spec` (one per spec and settings, process-wide).

    Configuration problems surface here, before a run starts: a missing OPENAI_API_KEY, a
    missing weights package or a wrong sha256 raise ConfigError.
    """
    parsed = spec
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


def describe(spec: ModelSpec) -> dict[str, Any]:
    """What run.json records about a spec: back end, exact weights, endpoint (never a key)."""
    parsed = spec
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
        from memeval.models.local import CHUNK, N_CTX
    except ImportError:  # llama-cpp-python missing: describe what we can
        CHUNK = N_CTX = None  # type: ignore[assignment]
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
        "n_batch": CHUNK,  # the batch sizes llama.cpp evaluates prompts with
        "n_ubatch": CHUNK,
        "cpu": cpu_name(),
        "llama_cpp_python": _version("llama-cpp-python"),
    }


def cpu_name() -> str:
    """The CPU's model name: the embedded model's numerics may differ from one CPU to another."""
    try:
        lines = Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        lines = []
    for line in lines:
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None
