"""Building the memory system a run asked for, one per scenario repeat."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memeval.errors import ConfigError
from memeval.models.base import ChatModel
from memeval.plugins import load_attr
from memeval.scenario.schema import ResolvedScenario
from memeval.systems.base import MemoryKey, MemorySystem
from memeval.systems.full_history import FullHistory
from memeval.systems.none import NoMemory
from memeval.systems.oracle import OracleMemory
from reference_memory.model import MemoryModel

VALID = "file, none, full-history, oracle, or package.module:factory"


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


def build_system(spec: str, env: SystemEnv) -> MemorySystem:
    if spec == "file":
        return _file_system(env)
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


def check_memory_spec(spec: str) -> None:
    """Fail early on a memory spec that can never build (unknown name, unimportable plugin)."""
    if spec in ("file", "none", "full-history", "oracle"):
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


def _file_system(env: SystemEnv) -> MemorySystem:
    from memeval.systems.file import FileSystemMemory
    from reference_memory import PostgresStore, SQLiteStore

    store: Any
    if env.store:
        if not env.store.startswith(("postgresql://", "postgres://")):
            raise ConfigError(f"--store {env.store!r} must be a postgresql:// DSN")
        store = PostgresStore(env.store)
    else:
        env.workdir.mkdir(parents=True, exist_ok=True)
        store = SQLiteStore(env.workdir / "memory.sqlite")
    return FileSystemMemory(env.memory_models, store, **env.options)
