"""The embedded default store: one SQLite file holding every (user, space) file and its versions.

Writes run in `BEGIN IMMEDIATE` transactions, so concurrent writers (threads or processes)
serialize and version numbers never collide; WAL mode keeps reads unblocked meanwhile. The
per-key update lock is an exclusive `flock` on a small lock file named by a hash of the key
(never by the key itself): it is held across a whole read-modify-write — model calls included —
without holding SQLite's database-wide write lock that long, so updates of different keys still
run in parallel, and the OS releases it if the process dies. POSIX only (fcntl).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

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

_SCHEMA = (
    f"""CREATE TABLE IF NOT EXISTS memory_files (
        user_id TEXT NOT NULL, space TEXT NOT NULL, version INTEGER NOT NULL,
        text TEXT NOT NULL CHECK (length(text) <= {CAP}), updated_at TEXT NOT NULL,
        PRIMARY KEY (user_id, space))""",
    f"""CREATE TABLE IF NOT EXISTS memory_versions (
        user_id TEXT NOT NULL, space TEXT NOT NULL, version INTEGER NOT NULL,
        text TEXT NOT NULL CHECK (length(text) <= {CAP}), created_at TEXT NOT NULL,
        PRIMARY KEY (user_id, space, version))""",
)
_UPSERT = """INSERT INTO memory_files (user_id, space, version, text, updated_at)
    VALUES (?, ?, 1, ?, ?)
    ON CONFLICT (user_id, space) DO UPDATE
    SET version = memory_files.version + 1, text = excluded.text, updated_at = excluded.updated_at
    RETURNING version"""
_POOL_SIZE = 4


class SQLiteStore:
    """`SQLiteStore("memory.db")`; `":memory:"` works too (one shared connection, this process)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        lock_timeout_s: float = 600.0,
        busy_timeout_s: float = 30.0,
    ) -> None:
        self.path = str(path)
        self.lock_timeout_s = lock_timeout_s
        self.busy_timeout_s = busy_timeout_s
        self._in_memory = self.path == ":memory:"
        self._idle: list[sqlite3.Connection] = []
        self._guard = threading.Lock()
        self._closed = False
        self._shared_lock = threading.Lock()  # serializes use of the one ":memory:" connection
        self._shared = self._connect() if self._in_memory else None
        self._key_locks: dict[bytes, threading.Lock] = {}  # ":memory:" only: no other process
        if not self._in_memory:
            self._lock_dir = Path(self.path).with_name(Path(self.path).name + ".locks")
            self._lock_dir.mkdir(exist_ok=True)
        with self._connection() as conn, _immediate(conn):
            for statement in _SCHEMA:
                conn.execute(statement)

    def get(self, user: str, space: str) -> str:
        check_key(user, space)
        with self._connection() as conn:
            row = conn.execute(
                "SELECT text FROM memory_files WHERE user_id = ? AND space = ?", (user, space)
            ).fetchone()
        return row[0] if row else SKELETON

    def put(self, user: str, space: str, text: str) -> None:
        check_key(user, space)
        check_text(text)
        now = datetime.now(UTC).isoformat()
        try:
            with self._connection() as conn, _immediate(conn):
                (version,) = conn.execute(_UPSERT, (user, space, text, now)).fetchone()
                conn.execute(
                    "INSERT INTO memory_versions VALUES (?, ?, ?, ?, ?)",
                    (user, space, version, text, now),
                )
        except sqlite3.IntegrityError as exc:
            if "CHECK constraint" in str(exc):
                raise CapExceeded(len(text)) from exc
            raise StoreError(f"sqlite write failed: {exc}") from exc

    def versions(self, user: str, space: str) -> list[str]:
        check_key(user, space)
        with self._connection() as conn:
            rows = conn.execute(
                "SELECT text FROM memory_versions WHERE user_id = ? AND space = ? ORDER BY version",
                (user, space),
            ).fetchall()
        return [row[0] for row in rows]

    @contextmanager
    def lock(self, user: str, space: str) -> Iterator[KeySession]:
        check_key(user, space)
        digest = key_digest(user, space)
        session = _Session(self, user, space)
        if self._in_memory:
            with self._guard:
                key_lock = self._key_locks.setdefault(digest, threading.Lock())
            if not key_lock.acquire(timeout=self.lock_timeout_s):
                raise LockTimeout(_timeout_message(user, space, self.lock_timeout_s))
            try:
                yield session
            finally:
                key_lock.release()
            return
        lock_file = self._lock_dir / f"{digest.hex()[:32]}.lock"
        with _file_lock(lock_file, self.lock_timeout_s, user, space):
            yield session

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._guard:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
        if self._shared is not None:
            with self._shared_lock:
                self._shared.close()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, timeout=self.busy_timeout_s, isolation_level=None, check_same_thread=False
        )
        if not self._in_memory:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
        return conn

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """A connection used by one thread at a time, returned to a small idle pool afterwards."""
        if self._shared is not None:
            with self._shared_lock:
                yield self._shared
            return
        with self._guard:
            if self._closed:
                raise StoreError(f"store {self.path} is closed")
            conn = self._idle.pop() if self._idle else None
        conn = conn or self._connect()
        try:
            yield conn
        finally:
            with self._guard:
                keep = not self._closed and len(self._idle) < _POOL_SIZE and not conn.in_transaction
                if keep:
                    self._idle.append(conn)
            if not keep:
                conn.close()


class _Session:
    def __init__(self, store: SQLiteStore, user: str, space: str) -> None:
        self.store, self.user, self.space = store, user, space

    def get(self) -> str:
        return self.store.get(self.user, self.space)

    def put(self, text: str) -> None:
        self.store.put(self.user, self.space, text)


def _timeout_message(user: str, space: str, timeout_s: float) -> str:
    return f"lock on ({user!r}, {space!r}) not acquired within {timeout_s:g}s"


@contextmanager
def _immediate(conn: sqlite3.Connection) -> Iterator[None]:
    """A write transaction that takes SQLite's write lock up front (no upgrade deadlocks)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


@contextmanager
def _file_lock(path: Path, timeout_s: float, user: str, space: str) -> Iterator[None]:
    import fcntl  # POSIX only; imported here so the module still imports elsewhere

    deadline = time.monotonic() + timeout_s
    delay = 0.001
    with open(path, "a") as handle:
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockTimeout(_timeout_message(user, space, timeout_s)) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
