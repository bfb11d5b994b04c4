"""Fixtures for the reference pipeline: a fresh SQLite store per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reference_memory import SQLiteStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "memory.db")
    yield s
    s.close()
