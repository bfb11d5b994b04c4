"""The reference memory pipeline: one structured markdown file per (user, space), always loaded,
kept current by background model calls after each turn. Imports nothing from memeval."""

from typing import TYPE_CHECKING, Any

from reference_memory.calls import Caller, ModelCallError
from reference_memory.compaction import Compactor
from reference_memory.document import (
    CAP,
    HEADINGS,
    SECTIONS,
    SKELETON,
    TARGET,
    TRIGGER,
    Section,
    missing_sections,
    parse,
    section_sizes,
    user_lines,
)
from reference_memory.edits import EditError, EditOp, apply_ops
from reference_memory.model import ROLES, Completion, MemoryModel, Message, ModelsArg
from reference_memory.pipeline import FileMemory
from reference_memory.report import (
    Attempt,
    CallRecord,
    CompactionReport,
    SafetyVerdict,
    Status,
    UpdateReport,
)
from reference_memory.safety import ClassifierSafety, SafetyStrategy, SafetyUnavailable, Verdict
from reference_memory.store import (
    CapExceeded,
    KeySession,
    LockTimeout,
    SQLiteStore,
    Store,
    StoreError,
)
from reference_memory.summarizer import Summarizer
from reference_memory.templates import template_hashes
from reference_memory.turn import Turn
from reference_memory.updater import OpsUpdater, UpdateInput, UpdaterGaveUp, UpdaterStrategy

__all__ = [
    "CAP",
    "HEADINGS",
    "ROLES",
    "SECTIONS",
    "SKELETON",
    "TARGET",
    "TRIGGER",
    "Attempt",
    "CallRecord",
    "Caller",
    "CapExceeded",
    "ClassifierSafety",
    "CompactionReport",
    "Compactor",
    "Completion",
    "EditError",
    "EditOp",
    "FileMemory",
    "KeySession",
    "LockTimeout",
    "MemoryModel",
    "Message",
    "ModelCallError",
    "ModelsArg",
    "OpsUpdater",
    "PostgresStore",
    "SQLiteStore",
    "SafetyStrategy",
    "SafetyUnavailable",
    "SafetyVerdict",
    "Section",
    "Status",
    "Store",
    "StoreError",
    "Summarizer",
    "Turn",
    "UpdateInput",
    "UpdateReport",
    "UpdaterGaveUp",
    "UpdaterStrategy",
    "Verdict",
    "apply_ops",
    "missing_sections",
    "parse",
    "section_sizes",
    "template_hashes",
    "user_lines",
]


if TYPE_CHECKING:
    from reference_memory.store.postgres import PostgresStore


def __getattr__(name: str) -> Any:
    if name == "PostgresStore":  # imported on first use: psycopg is only needed for PostgreSQL
        from reference_memory.store.postgres import PostgresStore

        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
