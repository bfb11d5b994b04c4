"""The server store: PostgreSQL through psycopg 3 and psycopg_pool.

Two pools. The main pool serves `get`/`put`/`versions`. A separate small pool serves update
locks: `lock(user, space)` opens a transaction on one of its connections, takes
`pg_advisory_xact_lock` on a 64-bit hash of the key, and the update reads and writes through
that same transaction, so the write commits and the lock releases together (a lost lock
connection loses the write rather than interleaving it). Memory jobs holding locks therefore
never starve foreground reads, and different keys lock independently. The cap is checked in
Python and by CHECK constraints.

Sync psycopg, called off the event loop by `FileMemory`: the store API is synchronous
(usable from scripts, the harness and tests alike), and sync pools are thread-safe and not
bound to one event loop.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool, PoolTimeout

from reference_memory.document import CAP, SKELETON
from reference_memory.store.base import (
    CapExceeded,
    KeySession,
    LockTimeout,
    StoreError,
    check_key,
    check_text,
    key_digest,
)

_SCHEMA_LOCK = 0x6D656D6576616C  # serializes concurrent schema creation ("memeval")
_TABLES = (
    """CREATE TABLE IF NOT EXISTS {schema}.memory_files (
        user_id text NOT NULL, space text NOT NULL, version integer NOT NULL,
        text text NOT NULL, updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (user_id, space),
        CONSTRAINT memory_files_cap CHECK (char_length(text) <= {cap}))""",
    """CREATE TABLE IF NOT EXISTS {schema}.memory_versions (
        user_id text NOT NULL, space text NOT NULL, version integer NOT NULL,
        text text NOT NULL, created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (user_id, space, version),
        CONSTRAINT memory_versions_cap CHECK (char_length(text) <= {cap}))""",
)
_UPSERT = """INSERT INTO {schema}.memory_files AS f (user_id, space, version, text)
    VALUES (%s, %s, 1, %s)
    ON CONFLICT (user_id, space) DO UPDATE
    SET version = f.version + 1, text = EXCLUDED.text, updated_at = now()
    RETURNING version"""
_INSERT_VERSION = """INSERT INTO {schema}.memory_versions (user_id, space, version, text)
    VALUES (%s, %s, %s, %s)"""
_GET = "SELECT text FROM {schema}.memory_files WHERE user_id = %s AND space = %s"
_VERSIONS = """SELECT text FROM {schema}.memory_versions
    WHERE user_id = %s AND space = %s ORDER BY version"""


class PostgresStore:
    """`PostgresStore("postgresql://...")`; `schema` picks the PostgreSQL schema for the tables."""

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = "public",
        pool_size: int = 4,
        lock_pool_size: int = 4,
        lock_timeout_s: float = 600.0,
        connect_timeout_s: float = 10.0,
    ) -> None:
        self.schema = schema
        self.lock_timeout_s = lock_timeout_s
        options: dict[str, Any] = {
            "autocommit": True,
            "connect_timeout": max(1, int(connect_timeout_s)),
        }
        self._pool = ConnectionPool(
            dsn, min_size=1, max_size=pool_size, kwargs=options, open=True, name="memory"
        )
        self._lock_pool = ConnectionPool(
            dsn, min_size=1, max_size=lock_pool_size, kwargs=options, open=True, name="memory-locks"
        )
        try:
            self._pool.wait(timeout=connect_timeout_s)
            self._create_schema()
        except (PoolTimeout, psycopg.Error) as exc:
            self.close()
            raise StoreError(f"cannot use PostgreSQL store: {exc}") from exc

    @staticmethod
    def lock_key(user: str, space: str) -> int:
        """The signed 64-bit advisory-lock key for (user, space)."""
        return int.from_bytes(key_digest(user, space)[:8], "big", signed=True)

    def get(self, user: str, space: str) -> str:
        check_key(user, space)
        with self._pool.connection() as conn:
            return _get(conn, self._q(_GET), user, space)

    def put(self, user: str, space: str, text: str) -> None:
        check_key(user, space)
        check_text(text)
        with self._pool.connection() as conn, conn.transaction():
            self._write(conn, user, space, text)

    def versions(self, user: str, space: str) -> list[str]:
        check_key(user, space)
        with self._pool.connection() as conn:
            rows = conn.execute(self._q(_VERSIONS), (user, space)).fetchall()
        return [row[0] for row in rows]

    @contextmanager
    def lock(self, user: str, space: str) -> Iterator[KeySession]:
        check_key(user, space)
        with self._lock_pool.connection(timeout=self.lock_timeout_s) as conn, conn.transaction():
            conn.execute(
                "SELECT set_config('lock_timeout', %s, true)",
                (f"{int(self.lock_timeout_s * 1000)}ms",),
            )
            try:
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (self.lock_key(user, space),))
            except psycopg.errors.LockNotAvailable as exc:
                raise LockTimeout(
                    f"lock on ({user!r}, {space!r}) not acquired within {self.lock_timeout_s:g}s"
                ) from exc
            yield _Session(self, conn, user, space)

    def close(self) -> None:
        self._lock_pool.close()
        self._pool.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self, conn: psycopg.Connection[Any], user: str, space: str, text: str) -> None:
        try:
            with conn.transaction():  # a savepoint inside the lock's transaction
                row = conn.execute(self._q(_UPSERT), (user, space, text)).fetchone()
                if row is None:
                    raise StoreError("upsert returned no version")
                conn.execute(self._q(_INSERT_VERSION), (user, space, row[0], text))
        except psycopg.errors.CheckViolation as exc:
            raise CapExceeded(len(text)) from exc

    def _q(self, template: str) -> sql.Composed:
        return sql.SQL(template).format(schema=sql.Identifier(self.schema), cap=sql.Literal(CAP))

    def _create_schema(self) -> None:
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            conn.execute(
                sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.schema))
            )
            for statement in _TABLES:
                conn.execute(self._q(statement))


class _Session:
    """Reads and writes inside the lock's transaction."""

    def __init__(self, store: PostgresStore, conn: psycopg.Connection[Any], user: str, space: str):
        self.store, self.conn, self.user, self.space = store, conn, user, space

    def get(self) -> str:
        return _get(self.conn, self.store._q(_GET), self.user, self.space)

    def put(self, text: str) -> None:
        check_text(text)
        self.store._write(self.conn, self.user, self.space, text)


def _get(conn: psycopg.Connection[Any], query: sql.Composed, user: str, space: str) -> str:
    row = conn.execute(query, (user, space)).fetchone()
    return row[0] if row else SKELETON
