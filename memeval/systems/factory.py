"""Building the memory system a run asked for, one per scenario repeat."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from memeval.errors import ConfigError
from memeval.models.accounting import CallSink
from memeval.models.base import ChatModel
from memeval.plugins import load_attr
from memeval.scenario.schema import ResolvedScenario
from memeval.systems import BUILTIN
from memeval.systems.base import MemoryKey, MemorySystem
from memeval.systems.full_history import FullHistory
from memeval.systems.none import NoMemory
from memeval.systems.oracle import OracleMemory
from reference_memory.model import MemoryModel

if TYPE_CHECKING:
    from memeval.tracing.spans import Tracing

VALID = (
    "file, retrieval, core-search, core-search-inject, mem0, none, full-history, oracle, "
    "or package.module:factory"
)
# built-in systems that learn through the pipeline's model roles (mem0 calls the updater's)
LEARNING = ("file", "retrieval", "core-search", "core-search-inject", "mem0")


@dataclass
class SystemEnv:
    """What a memory system may use. A user's `pkg.mod:factory` is called with this."""

    memory_models: Mapping[str, MemoryModel]  # summarizer, updater, safety, compactor
    chat_models: Mapping[str, ChatModel]
    workdir: Path  # private to this scenario repeat
    scenario: ResolvedScenario
    store: str | None = None  # a postgresql:// DSN; None = SQLite in workdir
    namespace: str = ""  # makes keys unique on a shared store
    options: dict[str, Any] = field(default_factory=dict)  # FileMemory options
    calls: CallSink | None = None  # the unit's call sink, for calls made outside ChatModels
    tracing: Tracing | None = None  # the run's tracing, for spans of calls made outside them


def build_system(spec: str, env: SystemEnv) -> MemorySystem:
    if spec == "file":
        return _file_system(env)
    if spec == "retrieval":
        return _retrieval(env)
    if spec == "core-search":
        return _core_search(env, "tool")
    if spec == "core-search-inject":
        return _core_search(env, "inject")
    if spec == "mem0":
        return _mem0(env)
    if spec == "none":
        return NoMemory()
    if spec == "full-history":
        return FullHistory()
    if spec == "oracle":
        return OracleMemory()
    if ":" not in spec:
        raise ConfigError(f"unknown memory system {spec!r} (valid: {VALID})")
    target = load_attr(spec, "--memory")
    system = target if _is_system(target) else target(env) if callable(target) else target
    if not _is_system(system):
        raise ConfigError(
            f"--memory {spec!r} did not give a memory system (needs async context, observe "
            "and snapshot methods)"
        )
    return system


def check_memory_spec(spec: str, updater: str | None = None) -> None:
    """Fail early on a memory spec that can never build (unknown name, unimportable plugin;
    for mem0: the library or its embedder not installed, an updater it cannot call)."""
    if spec == "mem0":
        from memeval.systems.mem0_setup import check_mem0, check_updater

        check_updater(updater)
        check_mem0()
    if spec in BUILTIN:
        return
    if ":" not in spec:
        raise ConfigError(f"unknown memory system {spec!r} (valid: {VALID})")
    load_attr(spec, "--memory")


def memory_key(scenario: ResolvedScenario, env: SystemEnv) -> MemoryKey:
    """The (user, space) the scenario names; on a shared PostgreSQL store the user is prefixed
    with the run unit so concurrent repeats never share a file."""
    user = f"{env.namespace}/{scenario.user}" if env.store and env.namespace else scenario.user
    return MemoryKey(user=user, space=scenario.space)


def _is_system(obj: Any) -> bool:
    return not isinstance(obj, type) and all(
        callable(getattr(obj, name, None)) for name in ("context", "observe", "snapshot")
    )


def _file_store(env: SystemEnv) -> Any:
    from reference_memory import PostgresStore, SQLiteStore

    if env.store:
        if not env.store.startswith(("postgresql://", "postgres://")):
            raise ConfigError(f"--store {env.store!r} must be a postgresql:// DSN")
        return PostgresStore(env.store)
    env.workdir.mkdir(parents=True, exist_ok=True)
    return SQLiteStore(env.workdir / "memory.sqlite")


def _file_system(env: SystemEnv) -> MemorySystem:
    from memeval.systems.file import FileSystemMemory

    return FileSystemMemory(env.memory_models, _file_store(env), **env.options)


def _fact_store(env: SystemEnv, name: str) -> Any:
    """Retrieval stores are SQLite files in the unit's private directory (never --store)."""
    from memeval.systems.fact_store import FactStore

    env.workdir.mkdir(parents=True, exist_ok=True)
    return FactStore(env.workdir / name)


def _retrieval(env: SystemEnv) -> MemorySystem:
    from memeval.systems.retrieval import RetrievalMemory

    return RetrievalMemory(env.memory_models, _fact_store(env, "facts.sqlite"))


def _core_search(env: SystemEnv, mode: Literal["tool", "inject"]) -> MemorySystem:
    from memeval.systems.core_search import CoreSearchMemory

    archive = _fact_store(env, "archive.sqlite")
    return CoreSearchMemory(env.memory_models, _file_store(env), archive, mode=mode, **env.options)


def _mem0(env: SystemEnv) -> MemorySystem:
    from memeval.systems.mem0_system import build_mem0

    return build_mem0(env, calls=env.calls, tracing=env.tracing)
