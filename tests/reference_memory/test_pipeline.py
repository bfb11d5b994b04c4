"""FileMemory as a whole: report contents, never raising, serialization, isolation, context."""

from __future__ import annotations

import asyncio
import json

import pytest

from reference_memory import SKELETON, FileMemory, SQLiteStore, Status, Turn, UpdateReport
from reference_memory.store.base import KeySession
from reference_memory.testing import ALLOW, Request, ScriptedModel, add, ops, roles, turn

NOTE = add("## Conventions", "- [user] Datasets have exactly 70 rows")


async def test_the_report_records_every_call_step_and_file(store: SQLiteStore) -> None:
    models = roles(summarizer=["The user said 70 rows."], updater=[ops(NOTE)], safety=[ALLOW])
    report = await FileMemory(models, store).update("dana", "acme", turn())
    assert (report.strategy, report.safety_strategy) == ("ops", "classifier")
    assert report.summary == "The user said 70 rows."
    assert [(c.role, c.model, c.error) for c in report.calls] == [
        ("summarizer", "summarizer-model", None),
        ("updater", "updater-model", None),
        ("safety", "safety-model", None),
    ]
    assert all(
        c.prompt_tokens > 0 and c.completion_tokens > 0 and c.latency_s >= 0 for c in report.calls
    )
    assert {"lock_wait", "read", "summarize", "update", "safety", "write", "total"} <= set(
        report.timings
    )
    assert report.timings["total"] >= report.timings["update"]
    # the report survives a JSON round trip unchanged (the harness stores it)
    again = UpdateReport.from_dict(json.loads(json.dumps(report.to_dict())))
    assert again == report


async def test_the_summarizer_sees_the_whole_turn_including_tools(store: SQLiteStore) -> None:
    models = roles(summarizer=["Nothing worth remembering."], updater=['{"ops": []}'])
    t = turn("Make a dataset from agent-prod.")
    t.messages[2]["content"] = json.dumps({"dataset": "agent-prod-sample", "rows": "x" * 5000})
    await FileMemory(models, store).update("dana", "acme", t)
    prompt = models["summarizer"].requests[0].last
    assert "USER: Make a dataset from agent-prod." in prompt
    assert 'TOOL CALL create_dataset: {"rows":70}' in prompt
    assert "TOOL RESULT create_dataset:" in prompt and "agent-prod-sample" in prompt
    assert "chars omitted]" in prompt and len(prompt) < 3000  # long tool results are clipped
    assert "ASSISTANT: Noted." in prompt


async def test_summarizer_failure_is_recorded_and_nothing_is_written(store: SQLiteStore) -> None:
    models = roles(summarizer=[ConnectionError("endpoint down")])
    report = await FileMemory(models, store).update("dana", "acme", turn())
    assert report.status == Status.FAILED
    assert report.errors == ["summarizer: ConnectionError: endpoint down"]
    assert report.file_after == report.file_before == SKELETON
    assert store.versions("dana", "acme") == []


async def test_an_incomplete_turn_teaches_nothing(store: SQLiteStore) -> None:
    models = roles()
    report = await FileMemory(models, store).update(
        "dana", "acme", Turn(turn().messages, completed=False)
    )
    assert report.status == Status.NOT_COMPLETED and report.calls == []
    assert report.file_before == report.file_after == SKELETON


class BrokenStore(SQLiteStore):
    def put(self, user: str, space: str, text: str) -> None:
        raise OSError("disk full")


async def test_update_never_raises_even_when_the_store_fails(tmp_path) -> None:
    store = BrokenStore(tmp_path / "m.db")
    models = roles(summarizer=["s"], updater=[ops(NOTE)], safety=[ALLOW])
    report = await FileMemory(models, store).update("dana", "acme", turn())
    assert report.status == Status.FAILED
    assert report.errors == ["OSError: disk full"]
    assert report.file_after == report.file_before == SKELETON
    store.close()


async def test_a_closed_store_is_a_failure_too(tmp_path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    store.close()
    report = await FileMemory(roles(), store).update("dana", "acme", turn())
    assert report.status == Status.FAILED and "closed" in report.errors[0]


async def test_one_model_or_a_role_mapping_with_a_default(store: SQLiteStore) -> None:
    shared = ScriptedModel(["s", ops(NOTE), ALLOW], name="one-model")
    report = await FileMemory(shared, store).update("dana", "acme", turn())
    assert report.status == Status.WRITTEN and {c.model for c in report.calls} == {"one-model"}
    mapped = {"default": ScriptedModel(["s", '{"ops": []}'], name="default-model")}
    report = await FileMemory(mapped, store).update("dana", "acme", turn())
    assert report.status == Status.UNCHANGED and {c.model for c in report.calls} == {
        "default-model"
    }


async def test_space_isolation(store: SQLiteStore) -> None:
    models = roles(summarizer=["s"], updater=[ops(NOTE)], safety=[ALLOW])
    memory = FileMemory(models, store)
    await memory.update("dana", "acme", turn())
    assert "70 rows" in store.get("dana", "acme")
    assert store.get("dana", "other-space") == SKELETON
    assert store.get("someone-else", "acme") == SKELETON
    assert "70 rows" not in await memory.context("dana", "other-space")
    assert store.versions("dana", "other-space") == []


async def test_context_holds_the_file_and_the_three_instructions(store: SQLiteStore) -> None:
    store.put(
        "dana", "acme", SKELETON.replace("## Assets\n", "## Assets\n- Dataset agent-prod-sample\n")
    )
    message = await FileMemory(roles(), store).context("dana", "acme")
    assert "- Dataset agent-prod-sample" in message
    assert "<memory>\n## User Profile" in message
    assert "Answer from memory first" in message
    assert "existing one" in message and "instead of creating a\n   duplicate" in message
    assert '"[user]"' in message and "high-confidence facts" in message


async def test_same_key_updates_in_one_process_run_one_at_a_time(store: SQLiteStore) -> None:
    active = 0
    overlaps = 0

    def marker(i: int):
        async def answer(request: Request) -> str:
            nonlocal active, overlaps
            active += 1
            overlaps += active > 1
            await asyncio.sleep(0.001)  # give the other updates every chance to interleave
            active -= 1
            return ops(add("## Assets", f"- marker {i:02d}"))

        return answer

    n = 12
    models = roles(summarizer=["s"] * n, updater=[marker(i) for i in range(n)], safety=[ALLOW] * n)
    memory = FileMemory(models, store)
    reports = await asyncio.gather(*(memory.update("dana", "acme", turn()) for _ in range(n)))
    assert [r.status for r in reports] == [Status.WRITTEN] * n
    assert overlaps == 0
    versions = store.versions("dana", "acme")
    assert len(versions) == n
    assert all(f"- marker {i:02d}\n" in versions[-1] for i in range(n))
    # each update started from the version the previous one wrote
    assert [r.file_before for r in reports] == [SKELETON, *versions[:-1]]


async def test_different_keys_in_one_process_do_not_wait_for_each_other(store: SQLiteStore) -> None:
    both_inside = asyncio.Event()
    inside: set[str] = set()

    def meet(key: str):
        async def answer(request: Request) -> str:
            inside.add(key)
            if len(inside) == 2:
                both_inside.set()
            await asyncio.wait_for(both_inside.wait(), 10)  # never set if the keys serialized
            return '{"ops": []}'

        return answer

    memory = FileMemory(roles(summarizer=["s", "s"], updater=[meet("a"), meet("b")]), store)
    reports = await asyncio.gather(
        memory.update("dana", "space-a", turn()), memory.update("dana", "space-b", turn())
    )
    assert [r.status for r in reports] == [Status.UNCHANGED, Status.UNCHANGED]


async def test_a_cancelled_update_releases_the_store_lock(store: SQLiteStore) -> None:
    gate = asyncio.Event()

    async def stall(request: Request) -> str:
        gate.set()
        await asyncio.sleep(30)
        return "never"

    memory = FileMemory(roles(summarizer=[stall]), store)
    task = asyncio.create_task(memory.update("dana", "acme", turn()))
    await gate.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # the key is free again: a lock attempt with no patience succeeds
    quick = SQLiteStore(store.path, lock_timeout_s=0.2)
    with quick.lock("dana", "acme") as session:
        assert isinstance(session, KeySession)
    quick.close()
