"""Where memory files live: SQLite (embedded default) or PostgreSQL, with versions and key locks."""

from reference_memory.store.base import (
    CapExceeded,
    KeySession,
    LockTimeout,
    Store,
    StoreError,
)
from reference_memory.store.postgres import PostgresStore
from reference_memory.store.sqlite import SQLiteStore

__all__ = [
    "CapExceeded",
    "KeySession",
    "LockTimeout",
    "PostgresStore",
    "SQLiteStore",
    "Store",
    "StoreError",
]
