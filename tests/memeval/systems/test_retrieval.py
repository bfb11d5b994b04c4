"""`retrieval`: facts extracted per turn, resolved against similar stored facts, top-k served."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from memeval.systems.base import MemoryKey, QueryAware, Restorable
from memeval.systems.fact_store import FactStore
from memeval.systems.retrieval import HEADER, RetrievalMemory
from reference_memory.testing import Answer, ScriptedModel, roles, turn

KEY = MemoryKey("ana", "workspace")
ROWS_70 = "Datasets must have exactly 70 rows."
ROWS_50 = "Datasets must have exactly 50 rows."
TIMEZONE = "The user's timezone is CET."


def facts(*items: str) -> str:
    return json.dumps({"facts": list(items)})


def event(kind: str, entry_id: int | None = None, text: str = "") -> str:
    return json.dumps({"event": kind, "id": entry_id, "text": text})


@pytest.fixture
def store(tmp_path: Path) -> Iterator[FactStore]:
    store = FactStore(tmp_path / "facts.db")
    yield store
    store.close()


def memory(
    store: FactStore,
    summarizer: Iterable[Answer] = (),
    updater: Iterable[Answer] = (),
    **options: int,
) -> tuple[RetrievalMemory, ScriptedModel, ScriptedModel]:
    models = roles(summarizer=summarizer, updater=updater)
    system = RetrievalMemory(models, store, **options)
    return system, models["summarizer"], models["updater"]


def seed(store: FactStore, *texts: str, key: MemoryKey = KEY) -> list[int]:
    return [store.add(key, text) for text in texts]


async def test_contradicted_fact_is_updated_not_kept_beside_the_old_one(store: FactStore) -> None:
    (old_id,) = seed(store, ROWS_70)
    system, summarizer, updater = memory(
        store, [facts(ROWS_50)], [event("UPDATE", old_id, ROWS_50)], max_facts=3
    )

    report = await system.observe(KEY, turn("From now on datasets need 50 rows."))

    assert report.status == "written", report.errors
    assert report.ops == [{"op": "update", "id": old_id, "old": ROWS_70, "text": ROWS_50}]
    assert report.file_before == f"- {ROWS_70}\n"
    assert await system.snapshot(KEY) == report.file_after == f"- {ROWS_50}\n"
    assert [e.id for e in store.entries(KEY)] == [old_id]
    assert report.summary == ROWS_50
    assert [c.role for c in report.calls] == ["summarizer", "updater"]
    # the extractor is bounded by max_facts; the resolver saw the stored fact with its id
    schema = summarizer.requests[0].schema
    assert schema is not None and schema["properties"]["facts"]["maxItems"] == 3
    assert f"[{old_id}] {ROWS_70}" in updater.requests[0].last
    schema = updater.requests[0].schema
    assert schema is not None and schema["properties"]["id"]["anyOf"][0]["enum"] == [old_id]


async def test_unrelated_fact_is_added_without_a_resolution_call(store: FactStore) -> None:
    (old_id,) = seed(store, ROWS_70)
    system, _, updater = memory(store, [facts(TIMEZONE)])

    report = await system.observe(KEY, turn("I work from Berlin, CET."))

    assert report.status == "written", report.errors
    assert updater.requests == []
    (op,) = report.ops
    assert op["op"] == "add" and op["text"] == TIMEZONE and op["id"] != old_id
    assert await system.snapshot(KEY) == f"- {ROWS_70}\n- {TIMEZONE}\n"


async def test_exact_duplicate_makes_no_call_and_changes_nothing(store: FactStore) -> None:
    seed(store, ROWS_70)
    system, _, updater = memory(store, [facts("  datasets MUST have\texactly 70   rows. ", " ")])

    report = await system.observe(KEY, turn())

    assert report.status == "unchanged"
    assert (report.ops, report.errors, updater.requests) == ([], [], [])
    assert report.file_after == report.file_before == f"- {ROWS_70}\n"


async def test_delete_removes_the_contradicted_fact(store: FactStore) -> None:
    tuning, _ = seed(store, "The user is tuning the v3 prompt of support-bot.", TIMEZONE)
    system, _, _ = memory(
        store,
        [facts("The user abandoned the v3 prompt of support-bot.")],
        [event("DELETE", tuning)],
    )

    report = await system.observe(KEY, turn("Forget v3, I dropped it."))

    assert report.status == "written", report.errors
    assert report.ops == [
        {"op": "delete", "id": tuning, "old": "The user is tuning the v3 prompt of support-bot."}
    ]
    assert await system.snapshot(KEY) == f"- {TIMEZONE}\n"


async def test_delete_with_text_stores_the_text_in_place_of_the_old_fact(
    store: FactStore,
) -> None:
    (old_id,) = seed(store, ROWS_70)
    system, _, _ = memory(store, [facts(ROWS_50)], [event("DELETE", old_id, ROWS_50)])

    report = await system.observe(KEY, turn())

    assert [op["op"] for op in report.ops] == ["delete", "add"]
    assert await system.snapshot(KEY) == f"- {ROWS_50}\n"


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ('{"facts": ["unterminated', "not valid JSON"),
        (RuntimeError("server down"), "server down"),
        ('{"facts": "one string"}', "expected"),
        ('{"facts": [42]}', "must be a string"),
    ],
)
async def test_failed_extraction_leaves_the_store_alone(
    store: FactStore, answer: Answer, error: str
) -> None:
    seed(store, ROWS_70)
    system, _, updater = memory(store, [answer])

    report = await system.observe(KEY, turn())

    assert report.status == "failed"
    assert len(report.errors) == 1 and error in report.errors[0]
    assert report.ops == [] and updater.requests == []
    assert report.file_after == report.file_before == await system.snapshot(KEY)
    assert report.file_after == f"- {ROWS_70}\n"


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (event("UPDATE", 999, ROWS_50), "999"),
        (event("DELETE", None), "None"),
        ('{"event": "MERGE", "id": null, "text": ""}', "MERGE"),
        (TimeoutError(), "timed out"),
        (RuntimeError("model crashed"), "model crashed"),
        ("garbage", "not valid JSON"),
    ],
)
async def test_failed_resolution_skips_that_fact_only(
    store: FactStore, answer: Answer, error: str
) -> None:
    seed(store, ROWS_70)
    system, _, _ = memory(store, [facts(ROWS_50, TIMEZONE)], [answer])

    report = await system.observe(KEY, turn())

    assert len(report.errors) == 1 and error in report.errors[0], report.errors
    assert ROWS_50 in report.errors[0]
    # the failed fact touched nothing; the unrelated one after it was still added
    assert report.status == "written"
    assert [op["op"] for op in report.ops] == ["add"]
    assert await system.snapshot(KEY) == f"- {ROWS_70}\n- {TIMEZONE}\n"


async def test_unknown_id_alone_changes_nothing(store: FactStore) -> None:
    (old_id,) = seed(store, ROWS_70)
    other = seed(store, "Secret fact about rows.", key=MemoryKey("bob", "workspace"))[0]
    system, _, _ = memory(store, [facts(ROWS_50)], [event("UPDATE", other, ROWS_50)])

    report = await system.observe(KEY, turn())

    assert report.status == "failed"  # every fact failed to resolve: not "nothing learned"
    assert str(other) in report.errors[0]
    assert [(e.id, e.text) for e in store.entries(KEY)] == [(old_id, ROWS_70)]
    assert store.entries(MemoryKey("bob", "workspace"))[0].text == "Secret fact about rows."


async def test_incomplete_turn_is_not_learned_from(store: FactStore) -> None:
    system, summarizer, _ = memory(store)
    paused = turn()
    paused.completed = False

    report = await system.observe(KEY, paused)

    assert report.status == "skipped-incomplete-turn" and summarizer.requests == []


async def test_context_for_serves_the_relevant_fact_first_within_k_and_budget(
    store: FactStore,
) -> None:
    seed(
        store,
        "The support-bot project uses GPT-4o for answers.",
        ROWS_70,
        "Evaluation datasets are named after the project.",
        TIMEZONE,
        "The user compares prompt versions on the staging datasets first.",
    )
    system, _, _ = memory(store, k=2)
    assert isinstance(system, QueryAware)

    served = await system.context_for(KEY, "How many rows must the datasets have?")

    assert served is not None
    header, *lines = served.splitlines()
    assert header == HEADER
    assert lines[0] == f"- {ROWS_70}"
    assert len(lines) == 2 and "datasets" in lines[1]
    assert await system.context_for(KEY, "weather tomorrow in Lisbon") is None

    budget = len(f"- {ROWS_70}") + 5
    narrow, _, _ = memory(store, k=8, budget_chars=budget)
    served = await narrow.context_for(KEY, "How many rows must the datasets have?")
    assert served is not None
    assert served.splitlines()[1:] == [f"- {ROWS_70}"]


async def test_context_without_a_query_serves_the_newest_facts_that_fit(
    store: FactStore,
) -> None:
    system, _, _ = memory(store, budget_chars=len(f"- {TIMEZONE}\n- {ROWS_50}"))
    assert await system.context(KEY) is None
    seed(store, ROWS_70, ROWS_50, TIMEZONE)

    served = await system.context(KEY)

    assert served == f"{HEADER}\n- {TIMEZONE}\n- {ROWS_50}"


@pytest.mark.parametrize(
    "query",
    [
        '"rows',
        "rows AND NOT datasets",
        "NEAR(rows datasets, 2)",
        "row* OR",
        "text: rows",
        "{text}: rows ^exactly",
        "((rows) -datasets",
        '"" * AND OR NOT',
    ],
)
async def test_fts5_syntax_in_a_query_or_fact_is_plain_text(store: FactStore, query: str) -> None:
    seed(store, ROWS_70)
    system, _, updater = memory(store, [facts(f"The user typed {query} once.")])

    served = await system.context_for(KEY, query)

    if "rows" in query:
        assert served is not None and f"- {ROWS_70}" in served
    else:
        assert served is None
    # the same text as an extracted fact goes through the candidate search too
    updater.answers.append(event("ADD", None, f"The user typed {query} once."))
    report = await system.observe(KEY, turn())
    assert report.errors == [] and report.status == "written"


async def test_restore_rebuilds_the_store_from_a_snapshot(store: FactStore) -> None:
    other = MemoryKey("bob", "workspace")
    seed(store, ROWS_70, TIMEZONE)
    seed(store, "Bob likes tables.", key=other)
    system, _, _ = memory(store)
    assert isinstance(system, Restorable)
    saved = await system.snapshot(KEY)

    store.clear(KEY)
    seed(store, "A fact written after the snapshot.")
    await system.restore(KEY, saved, [])

    assert await system.snapshot(KEY) == saved == f"- {ROWS_70}\n- {TIMEZONE}\n"
    assert await system.snapshot(other) == "- Bob likes tables.\n"
    await system.restore(KEY, "", [])
    assert await system.snapshot(KEY) == ""


async def test_prompts_keep_instructions_static_and_clip_long_tool_results(
    store: FactStore,
) -> None:
    long_result = turn()
    long_result.messages[2] = {**long_result.messages[2], "content": {"rows": ["x" * 50] * 200}}
    system, summarizer, _ = memory(store, [facts(), facts()])

    await system.observe(KEY, turn("Call me Ana."))
    await system.observe(KEY, long_result)

    first, second = (request.messages for request in summarizer.requests)
    assert [m["role"] for m in first] == ["system", "user"]
    assert first[0] == second[0]  # the prefix a llama.cpp server reuses between calls
    assert "Call me Ana." in first[1]["content"]
    assert "chars omitted]" in second[1]["content"]
    assert len(second[1]["content"]) < 3000
