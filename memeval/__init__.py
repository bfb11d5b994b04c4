"""memeval: an evaluation harness and regression suite for agent long-term memory.

The Python API: `run(RunOptions(...))` replays scenarios into a run directory;
`SavedRun.open(path)` reads one back (typed), `grade_run` grades it and `publish` writes its
verdicts, tables and report. Your own memory system follows `MemorySystem` (optional hooks:
`SessionAware`, `Restorable`, `Closeable`, `QueryAware`, `ToolProvider` with `MemoryTool`,
`Describable`) and is built from a `SystemEnv`; your own agent
follows `Agent`. `ScriptedModel` and `FunctionModel` stand in for models in tests.

Names load on first use, so `import memeval` (and the CLI's start) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from memeval.version import __version__

_EXPORTS = {
    "run": "memeval.runner",
    "RunOptions": "memeval.runner",
    "RunOutcome": "memeval.runner",
    "SavedRun": "memeval.rundir.saved",
    "RunInfo": "memeval.rundir.record",
    "TurnRecord": "memeval.rundir.record",
    "RunResults": "memeval.rundir.results",
    "grade_run": "memeval.grading.run",
    "publish": "memeval.publishing",
    "MemorySystem": "memeval.systems.base",
    "MemoryKey": "memeval.systems.base",
    "SessionStart": "memeval.systems.base",
    "SessionAware": "memeval.systems.base",
    "Restorable": "memeval.systems.base",
    "Closeable": "memeval.systems.base",
    "QueryAware": "memeval.systems.base",
    "ToolProvider": "memeval.systems.base",
    "Describable": "memeval.systems.base",
    "MemoryTool": "memeval.tools",
    "SystemEnv": "memeval.systems.factory",
    "Agent": "memeval.agent",
    "AgentResult": "memeval.agent",
    "ChatModel": "memeval.models.base",
    "ScriptedModel": "memeval.models.scripted",
    "FunctionModel": "memeval.models.scripted",
}

__all__ = [
    "Agent",
    "AgentResult",
    "ChatModel",
    "Closeable",
    "Describable",
    "FunctionModel",
    "MemoryKey",
    "MemorySystem",
    "MemoryTool",
    "QueryAware",
    "Restorable",
    "RunInfo",
    "RunOptions",
    "RunOutcome",
    "RunResults",
    "SavedRun",
    "ScriptedModel",
    "SessionAware",
    "SessionStart",
    "SystemEnv",
    "ToolProvider",
    "TurnRecord",
    "__version__",
    "grade_run",
    "publish",
    "run",
]

if TYPE_CHECKING:
    from memeval.agent import Agent, AgentResult
    from memeval.grading.run import grade_run
    from memeval.models.base import ChatModel
    from memeval.models.scripted import FunctionModel, ScriptedModel
    from memeval.publishing import publish
    from memeval.rundir.record import RunInfo, TurnRecord
    from memeval.rundir.results import RunResults
    from memeval.rundir.saved import SavedRun
    from memeval.runner import RunOptions, RunOutcome, run
    from memeval.systems.base import (
        Closeable,
        Describable,
        MemoryKey,
        MemorySystem,
        QueryAware,
        Restorable,
        SessionAware,
        SessionStart,
        ToolProvider,
    )
    from memeval.systems.factory import SystemEnv
    from memeval.tools import MemoryTool


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'memeval' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
