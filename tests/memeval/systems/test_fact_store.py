"""The FTS5 fact store under retrieval and core-search: BM25 order, keys kept apart, ids never
reused, and no query text read as FTS5 syntax."""

from __future__ import annotations

from pathlib import Path

import pytest

from memeval.systems.base import MemoryKey
from memeval.systems.fact_store import FactStore, match_query

DANA = MemoryKey("dana", "acme")
OMAR = MemoryKey("omar", "acme")


@pytest.fixture
def store(tmp_path: Path) -> FactStore:
    facts = FactStore(tmp_path / "facts.sqlite")
    yield facts  # type: ignore[misc]
    facts.close()


def test_search_ranks_the_entry_sharing_the_rarest_words_first(store: FactStore) -> None:
    store.add(DANA, "The eval dataset has 70 rows.")
    store.add(DANA, "The team prefers short answers.")
    store.add(DANA, "Summaries are checked for hallucination by the judge.")
    hits = store.search(DANA, "how many rows should the eval dataset have?", k=2)
    assert hits[0].text == "The eval dataset has 70 rows."
    assert len(hits) == 1  # the other entries share only stopwords with the query


def test_keys_are_kept_apart(store: FactStore) -> None:
    store.add(OMAR, "Omar's dataset has 90 rows.")
    first = store.add(DANA, "Dana's dataset has 70 rows.")
    assert [e.text for e in store.search(DANA, "dataset rows", k=5)] == [
        "Dana's dataset has 70 rows."
    ]
    assert not store.update(OMAR, first, "hijacked")  # another key's id changes nothing
    assert not store.delete(OMAR, first)
    assert store.entries(DANA)[0].text == "Dana's dataset has 70 rows."


def test_ids_are_never_reused(store: FactStore) -> None:
    store.add(DANA, "one")
    newest = store.add(DANA, "two")
    store.delete(DANA, newest)
    assert store.add(DANA, "three") != newest


def test_update_and_delete_keep_the_index_in_step(store: FactStore) -> None:
    entry = store.add(DANA, "The deadline is Friday.")
    store.update(DANA, entry, "The deadline is Monday.")
    assert store.search(DANA, "Friday", k=3) == []
    assert [e.text for e in store.search(DANA, "Monday", k=3)] == ["The deadline is Monday."]
    store.delete(DANA, entry)
    assert store.search(DANA, "deadline", k=3) == []


def test_kinds_filter_the_search(store: FactStore) -> None:
    store.add(DANA, "rows: 70", kind="fact")
    store.add(DANA, "rows were 80 before", kind="archive")
    assert [e.kind for e in store.search(DANA, "rows", k=5, kinds=["archive"])] == ["archive"]
    assert len(store.search(DANA, "rows", k=5)) == 2


@pytest.mark.parametrize(
    "query",
    ['"rows', "rows AND NOT", "NEAR(rows dataset)", "row*", "^rows", "text: rows", "{text}: x",
     "(rows OR", "-rows", "rows\x00", ""],
)  # fmt: skip
def test_fts5_syntax_in_a_query_is_only_words(store: FactStore, query: str) -> None:
    store.add(DANA, "The dataset has 70 rows.")
    hits = store.search(DANA, query, k=3)  # never raises
    expected = ["The dataset has 70 rows."] if "rows" in query else []
    assert [e.text for e in hits] == expected


def test_words_fold_case_as_the_tokenizer_does(store: FactStore) -> None:
    store.add(DANA, "Meeting in Straße 5 about the R package.")
    assert store.search(DANA, "STRAßE", k=1)
    assert store.search(DANA, "which R package", k=1)  # a one-letter name is a word
    assert match_query("the of and") is None  # nothing searchable left
