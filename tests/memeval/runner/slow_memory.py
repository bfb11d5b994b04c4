"""A `--memory package.module:factory` plugin for the resume test: the reference pipeline
with deterministic scripted models, pausing after each write so a kill lands mid-turn."""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

from memeval.models.adapter import as_memory_model
from memeval.models.scripted import FunctionModel
from memeval.systems.base import MemoryKey
from memeval.systems.factory import SystemEnv
from memeval.systems.file import FileSystemMemory
from reference_memory.report import UpdateReport
from reference_memory.turn import Turn

PAUSE_S = 0.2


def _pipeline(messages: list[dict[str, Any]], tools: Any, schema: Any) -> Any:
    last = str(messages[-1].get("content") or "")
    if schema is None:
        return "summary " + hashlib.sha256(last.encode()).hexdigest()[:10]
    if "verdict" in schema.get("properties", {}):
        return {"verdict": "allow", "reason": "ok"}
    tag = hashlib.sha256(last.encode()).hexdigest()[:10]
    return {"ops": [{"op": "add", "anchor": "## Conventions", "text": f"- note {tag}"}]}


class SlowFileMemory(FileSystemMemory):
    async def observe(self, key: MemoryKey, turn: Turn) -> UpdateReport:
        report = await super().observe(key, turn)
        await asyncio.sleep(PAUSE_S)  # the write is stored; the journal line is not yet
        return report


def factory(env: SystemEnv) -> SlowFileMemory:
    from reference_memory import SQLiteStore

    model = as_memory_model(FunctionModel(_pipeline, name="scripted-pipeline"))
    env.workdir.mkdir(parents=True, exist_ok=True)
    store = SQLiteStore(env.workdir / "memory.sqlite")
    return SlowFileMemory(
        dict.fromkeys(("summarizer", "updater", "safety", "compactor"), model), store
    )
