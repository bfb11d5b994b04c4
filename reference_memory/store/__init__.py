"""Where memory files live: SQLite (embedded default) or PostgreSQL, with versions and key locks."""

from typing import TYPE_CHECKING, Any

from reference_memory.store.base import (
    CapExceeded,
    KeySession,
    LockTimeout,
    Store,
    StoreError,
)
from reference_memory.store.sqlite import SQLiteStore

if TYPE_CHECKING:
    from reference_memory.store.postgres import PostgresStore


def __getattr__(name: str) -> Any:
    # psycopg loads only when PostgreSQL is used: SQLite-only hosts start faster without it.
    if name == "PostgresStore":
        from reference_memory.store.postgres import PostgresStore

        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CapExceeded",
    "KeySession",
    "LockTimeout",
    "PostgresStore",
    "SQLiteStore",
    "Store",
    "StoreError",
]
