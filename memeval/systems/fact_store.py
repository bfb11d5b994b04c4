"""Short memory texts in SQLite with an FTS5 index: what retrieval systems store and search.

One table holds every entry (a fact, an archived line) under a (user, space) key, with its
kind and the turn that wrote it; an FTS5 table mirrors the text and ranks matches with BM25.
A query is reduced to its words (letters and digits, lower-cased as FTS5's default tokenizer
folds them), quoted and OR-ed, so user or model text can never be read as FTS5 syntax. Ids
are never reused (AUTOINCREMENT), so an op that names an id always means one entry.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from memeval.systems.base import MemoryKey

WORD = re.compile(r"[^\W_]+", re.UNICODE)
# words too common to say what a query is about; BM25 weighs them low, dropping them keeps
# a one-word match on "the" from ranking at all
_COMMON = (
    "a an and are as at be but by can could did do does for from had has have how i if in "
    "is it its me my of on or our so that the their them then there these they this to us "
    "was we were what when where which who why will with would you your"
)
STOPWORDS = frozenset(_COMMON.split())

SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user TEXT NOT NULL,
    space TEXT NOT NULL,
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    source TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS entries_key ON entries (user, space, kind);
CREATE VIRTUAL TABLE IF NOT EXISTS entries_fts USING fts5(text, content='entries',
    content_rowid='id');
CREATE TRIGGER IF NOT EXISTS entries_ai AFTER INSERT ON entries BEGIN
    INSERT INTO entries_fts(rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER IF NOT EXISTS entries_ad AFTER DELETE ON entries BEGIN
    INSERT INTO entries_fts(entries_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER IF NOT EXISTS entries_au AFTER UPDATE OF text ON entries BEGIN
    INSERT INTO entries_fts(entries_fts, rowid, text) VALUES ('delete', old.id, old.text);
    INSERT INTO entries_fts(rowid, text) VALUES (new.id, new.text);
END;
"""


@dataclass(frozen=True)
class Entry:
    id: int
    kind: str
    text: str
    source: str = ""  # the turn that wrote it
    score: float = 0.0  # BM25 rank of a search hit (lower is better, as SQLite gives it)


def match_query(text: str) -> str | None:
    """An FTS5 MATCH expression for free text: its distinct content words, quoted, OR-ed;
    None when nothing searchable is left."""
    words: list[str] = []
    for word in WORD.findall(text.lower()):
        if word not in STOPWORDS and word not in words:
            words.append(word)
    return " OR ".join(f'"{word}"' for word in words) or None


class FactStore:
    """Entries per (user, space) in one SQLite file; safe to call from worker threads."""

    def __init__(self, path: Path | str) -> None:
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._lock = threading.Lock()
        with self._lock, self._db:
            self._db.executescript(SCHEMA)

    def add(self, key: MemoryKey, text: str, *, kind: str = "fact", source: str = "") -> int:
        with self._lock, self._db:
            cursor = self._db.execute(
                "INSERT INTO entries (user, space, kind, text, source) VALUES (?, ?, ?, ?, ?)",
                (key.user, key.space, kind, text, source),
            )
        return int(cursor.lastrowid or 0)

    def update(self, key: MemoryKey, entry_id: int, text: str, *, source: str = "") -> bool:
        """Replace an entry's text; False when the key holds no such entry."""
        with self._lock, self._db:
            cursor = self._db.execute(
                "UPDATE entries SET text = ?, source = ? WHERE id = ? AND user = ? AND space = ?",
                (text, source, entry_id, key.user, key.space),
            )
        return cursor.rowcount > 0

    def delete(self, key: MemoryKey, entry_id: int) -> bool:
        with self._lock, self._db:
            cursor = self._db.execute(
                "DELETE FROM entries WHERE id = ? AND user = ? AND space = ?",
                (entry_id, key.user, key.space),
            )
        return cursor.rowcount > 0

    def clear(self, key: MemoryKey, kind: str | None = None) -> None:
        with self._lock, self._db:
            if kind is None:
                self._db.execute(
                    "DELETE FROM entries WHERE user = ? AND space = ?", (key.user, key.space)
                )
            else:
                self._db.execute(
                    "DELETE FROM entries WHERE user = ? AND space = ? AND kind = ?",
                    (key.user, key.space, kind),
                )

    def entries(self, key: MemoryKey, kind: str | None = None) -> list[Entry]:
        """Every entry of the key (of one kind when given), oldest first."""
        sql = "SELECT id, kind, text, source FROM entries WHERE user = ? AND space = ?"
        args: tuple[str, ...] = (key.user, key.space)
        if kind is not None:
            sql, args = sql + " AND kind = ?", (*args, kind)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY id", args).fetchall()
        return [Entry(id=r[0], kind=r[1], text=r[2], source=r[3]) for r in rows]

    def search(
        self, key: MemoryKey, query: str, k: int, *, kinds: Iterable[str] | None = None
    ) -> list[Entry]:
        """The `k` entries BM25 ranks best for the query's words (fewer when fewer match);
        `kinds` limits the search to those kinds (None or empty: every kind)."""
        expression = match_query(query)
        if expression is None or k < 1:
            return []
        sql = (
            "SELECT e.id, e.kind, e.text, e.source, bm25(entries_fts) AS rank "
            "FROM entries_fts JOIN entries e ON e.id = entries_fts.rowid "
            "WHERE entries_fts MATCH ? AND e.user = ? AND e.space = ?"
        )
        args: list[object] = [expression, key.user, key.space]
        wanted = list(kinds or [])
        if wanted:
            sql += f" AND e.kind IN ({', '.join('?' for _ in wanted)})"
            args += wanted
        sql += " ORDER BY rank, e.id LIMIT ?"
        args.append(k)
        with self._lock:
            rows = self._db.execute(sql, args).fetchall()
        return [Entry(id=r[0], kind=r[1], text=r[2], source=r[3], score=r[4]) for r in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()
