"""A `--memory package.module:factory` plugin for the replica test: the reference pipeline on
the `--store` PostgreSQL, shared by every process that loads it.

Two `memeval run` processes stand for two replicas of an agent serving the same user: both
use the scenario's own (user, space) as the key, not the run-unique key the harness gives
each run on a shared store, so their updates land on one memory file. Each update adds one
marker line naming its turn (scripted models; a short pause widens the read-modify-write
window). Before its first turn, each process waits at a file barrier for the other.

Environment: REPLICA_SCHEMA (PostgreSQL schema for the tables), REPLICA_BARRIER (a
directory), REPLICA_PEERS (how many processes meet there).
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from pathlib import Path
from typing import Any

from memeval.models.adapter import as_memory_model
from memeval.models.scripted import FunctionModel
from memeval.systems.base import MemoryKey
from memeval.systems.factory import SystemEnv
from memeval.systems.file import FileSystemMemory
from reference_memory import PostgresStore
from reference_memory.report import UpdateReport
from reference_memory.turn import Turn

MARKER = re.compile(r"marker ([A-Z]-\d{3})")
PAUSE_S = 0.01


async def _pipeline(messages: list[dict[str, Any]], tools: Any, schema: Any) -> Any:
    text = "\n".join(str(m.get("content") or "") for m in messages)
    if schema is None:  # summarizer: name the turn's marker
        found = MARKER.search(text)
        return f"The user gave marker {found.group(1)}." if found else "No marker."
    if "verdict" in schema.get("properties", {}):
        return {"verdict": "allow", "reason": "a marker line"}
    found = MARKER.search(str(messages[-1].get("content") or ""))
    await asyncio.sleep(PAUSE_S)
    if found is None:
        return {"ops": []}
    return {"ops": [{"op": "add", "anchor": "## Assets", "text": f"- {found.group(1)}"}]}


class SharedKeyMemory(FileSystemMemory):
    """File memory whose key is the scenario's (user, space), whatever key the run passes."""

    def __init__(self, env: SystemEnv, store: PostgresStore) -> None:
        model = as_memory_model(FunctionModel(_pipeline, name="scripted-pipeline"))
        roles = ("summarizer", "updater", "safety", "compactor")
        super().__init__(dict.fromkeys(roles, model), store)
        self.key = MemoryKey(env.scenario.user, env.scenario.space)

    async def context(self, key: MemoryKey) -> str | None:
        return await super().context(self.key)

    async def observe(self, key: MemoryKey, turn: Turn) -> UpdateReport:
        return await super().observe(self.key, turn)

    async def snapshot(self, key: MemoryKey) -> str:
        return await super().snapshot(self.key)

    async def restore(self, key: MemoryKey, snapshot: str, turns: Any) -> None:
        """A replica never rewinds the shared file."""


def factory(env: SystemEnv) -> SharedKeyMemory:
    assert env.store, "the replica test runs with --store postgresql://..."
    store = PostgresStore(env.store, schema=os.environ["REPLICA_SCHEMA"])
    _barrier(Path(os.environ["REPLICA_BARRIER"]), env.scenario.name)
    return SharedKeyMemory(env, store)


def _barrier(directory: Path, tag: str) -> None:
    (directory / tag).touch()
    peers = int(os.environ.get("REPLICA_PEERS", "2"))
    deadline = time.monotonic() + 60
    while len(list(directory.iterdir())) < peers and time.monotonic() < deadline:
        time.sleep(0.005)
