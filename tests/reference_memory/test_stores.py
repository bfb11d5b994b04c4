"""Both stores: skeleton default, versions, the cap (in code and in the database), isolation,
and the per-key lock."""

from __future__ import annotations

import sqlite3
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from reference_memory import (
    CAP,
    SKELETON,
    CapExceeded,
    LockTimeout,
    PostgresStore,
    SQLiteStore,
    StoreError,
)
from reference_memory.store.base import Store


@pytest.fixture
def pg_schema(pg_dsn: str) -> Iterator[str]:
    """A fresh PostgreSQL schema per test, dropped afterwards."""
    name = f"rm_test_{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.fixture(params=["sqlite", "postgres"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        store: Store = SQLiteStore(tmp_path / "m.db", lock_timeout_s=0.3)
    else:
        request.applymarker(pytest.mark.postgres)
        dsn = request.getfixturevalue("pg_dsn")
        store = PostgresStore(dsn, schema=request.getfixturevalue("pg_schema"), lock_timeout_s=0.3)
    yield store
    store.close()


def test_empty_key_reads_the_skeleton(any_store: Store) -> None:
    assert any_store.get("dana", "acme") == SKELETON
    assert any_store.versions("dana", "acme") == []


def test_every_write_is_a_version(any_store: Store) -> None:
    for i in range(3):
        any_store.put("dana", "acme", SKELETON + f"- v{i}\n")
    assert any_store.get("dana", "acme") == SKELETON + "- v2\n"
    assert any_store.versions("dana", "acme") == [SKELETON + f"- v{i}\n" for i in range(3)]


def test_the_cap_is_enforced_by_the_store(any_store: Store) -> None:
    any_store.put("dana", "acme", "x" * CAP)  # exactly the cap is fine
    with pytest.raises(
        CapExceeded, match=f"memory file is {CAP + 1} characters, over the {CAP}-character cap"
    ):
        any_store.put("dana", "acme", "y" * (CAP + 1))
    assert any_store.get("dana", "acme") == "x" * CAP
    assert len(any_store.versions("dana", "acme")) == 1
    # the cap counts characters, not bytes
    any_store.put("dana", "acme", "é" * CAP)


def test_users_and_spaces_are_isolated(any_store: Store) -> None:
    any_store.put("dana", "acme", "acme file")
    any_store.put("dana", "legal", "legal file")
    any_store.put("eve", "acme", "eve file")
    assert any_store.get("dana", "acme") == "acme file"
    assert any_store.get("dana", "legal") == "legal file"
    assert any_store.get("eve", "acme") == "eve file"
    assert any_store.versions("dana", "acme") == ["acme file"]


@pytest.mark.parametrize(("user", "space"), [("", "acme"), ("dana", "  "), ("da\x00na", "acme")])
def test_bad_keys_are_named(any_store: Store, user: str, space: str) -> None:
    with pytest.raises(ValueError, match="must be a non-empty string without NUL"):
        any_store.get(user, space)


def test_the_lock_excludes_the_same_key_only(any_store: Store) -> None:
    held = threading.Event()
    release = threading.Event()

    def holder() -> None:
        with any_store.lock("dana", "acme"):
            held.set()
            release.wait(10)

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert held.wait(10)
        with (
            pytest.raises(
                LockTimeout, match=r"lock on \('dana', 'acme'\) not acquired within 0.3s"
            ),
            any_store.lock("dana", "acme"),
        ):
            pass
        with any_store.lock("dana", "other") as session:  # another key is free meanwhile
            session.put("written while acme is locked")
        assert any_store.get("dana", "other") == "written while acme is locked"
    finally:
        release.set()
        thread.join()
    with any_store.lock("dana", "acme") as session:
        assert session.get() == SKELETON


def test_an_error_inside_the_locked_block(any_store: Store) -> None:
    with pytest.raises(CapExceeded), any_store.lock("dana", "acme") as session:
        session.put("ok")
        session.put("z" * (CAP + 1))
    # PostgreSQL writes in the lock's transaction, so an error rolls back the whole block;
    # SQLite commits each put on its own (FileMemory puts once, as the block's last step)
    expected = [] if isinstance(any_store, PostgresStore) else ["ok"]
    assert any_store.versions("dana", "acme") == expected


def test_sqlite_check_constraint_backs_the_cap(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    store.close()
    with (
        sqlite3.connect(tmp_path / "m.db") as conn,
        pytest.raises(sqlite3.IntegrityError, match="CHECK constraint"),
    ):
        conn.execute(
            "INSERT INTO memory_versions VALUES ('u', 's', 1, ?, 'now')", ("x" * (CAP + 1),)
        )


@pytest.mark.postgres
def test_postgres_check_constraint_backs_the_cap(pg_dsn: str, pg_schema: str) -> None:
    PostgresStore(pg_dsn, schema=pg_schema).close()
    PostgresStore(pg_dsn, schema=pg_schema).close()  # schema creation is idempotent
    with psycopg.connect(pg_dsn) as conn:
        for table in ("memory_files", "memory_versions"):
            with pytest.raises(psycopg.errors.CheckViolation), conn.transaction():
                columns = "(user_id, space, version, text) VALUES (%s, %s, 1, %s)"
                conn.execute(
                    f'INSERT INTO "{pg_schema}".{table} {columns}', ("u", "s", "x" * (CAP + 1))
                )


@pytest.mark.postgres
def test_postgres_locked_writes_commit_with_the_lock(pg_dsn: str, pg_schema: str) -> None:
    store = PostgresStore(pg_dsn, schema=pg_schema)
    with store.lock("dana", "acme") as session:
        session.put("pending")
        assert store.get("dana", "acme") == SKELETON  # not visible before the lock's commit
        assert session.get() == "pending"
    assert store.get("dana", "acme") == "pending"
    with pytest.raises(RuntimeError), store.lock("dana", "acme") as session:
        session.put("rolled back")
        raise RuntimeError("crash mid-update")
    assert store.versions("dana", "acme") == ["pending"]
    store.close()


def test_postgres_unreachable_is_a_store_error() -> None:
    with pytest.raises(StoreError, match="cannot use PostgreSQL store"):
        PostgresStore("postgresql://postgres@127.0.0.1:1/none", connect_timeout_s=1)


def test_sqlite_in_memory(tmp_path: Path) -> None:
    store = SQLiteStore(":memory:")
    store.put("dana", "acme", "one")
    with store.lock("dana", "acme") as session:
        session.put(session.get() + " two")
    assert store.versions("dana", "acme") == ["one", "one two"]
    store.close()
