"""The updater step through FileMemory: anchors, whole-batch rejection, retries with the error."""

from __future__ import annotations

import json

from reference_memory import SKELETON, FileMemory, SQLiteStore, Status
from reference_memory.testing import ALLOW, ScriptExhausted, add, ops, replace, roles, turn
from reference_memory.updater import ops_schema

GOOD = add("## Conventions", "- [user] Datasets have exactly 70 rows")
SEEDED = SKELETON.replace("## Assets\n", "## Assets\n- Dataset a1\n- Dataset a1\n")


async def test_valid_anchor_is_written_in_one_attempt(store: SQLiteStore) -> None:
    models = roles(
        summarizer=["The user said datasets have 70 rows."], updater=[ops(GOOD)], safety=[ALLOW]
    )
    report = await FileMemory(models, store).update("dana", "acme", turn())
    assert report.status == Status.WRITTEN
    assert [a.error for a in report.attempts] == [None]
    assert report.ops == [GOOD]
    assert report.file_before == SKELETON
    assert (
        report.file_after
        == store.get("dana", "acme")
        == SKELETON.replace(
            "## Conventions\n", "## Conventions\n- [user] Datasets have exactly 70 rows\n"
        )
    )
    assert store.versions("dana", "acme") == [report.file_after]
    # the updater saw the file and the summary; static instructions come first
    request = models["updater"].requests[0]
    assert request.messages[0]["role"] == "system" and "[user]" in request.messages[0]["content"]
    assert (
        SKELETON.strip() in request.last and "The user said datasets have 70 rows." in request.last
    )


async def test_anchor_not_found_is_retried_with_the_exact_error(store: SQLiteStore) -> None:
    models = roles(
        summarizer=["s"], updater=[ops(add("## Nope", "- x")), ops(GOOD)], safety=[ALLOW]
    )
    report = await FileMemory(models, store).update("dana", "acme", turn())
    assert report.status == Status.WRITTEN
    assert report.attempts[0].error == "op 0: anchor not found: '## Nope'"
    assert report.attempts[0].ops == [add("## Nope", "- x")]
    retry = models["updater"].requests[1]
    assert "op 0: anchor not found: '## Nope'" in retry.last
    assert retry.messages[-2] == {"role": "assistant", "content": ops(add("## Nope", "- x"))}


async def test_a_failed_answer_repeated_word_for_word_is_not_asked_a_third_time(
    store: SQLiteStore,
) -> None:
    same = ops(add("## Nope", "- x"))
    models = roles(summarizer=["s"], updater=[same, same])  # a third call would be unscripted
    report = await FileMemory(models, store).update("dana", "acme", turn())
    assert report.status == Status.REJECTED
    assert [a.number for a in report.attempts] == [1, 2]
    assert report.errors == [
        "updater gave up after 2 attempts (the same answer twice: asking again would repeat it);"
        " last error: op 0: anchor not found: '## Nope'"
    ]
    assert report.file_after == report.file_before == SKELETON


async def test_anchor_found_twice_rejects_the_whole_batch(store: SQLiteStore) -> None:
    store.put("dana", "acme", SEEDED)
    first = ops(add("## Goals", "- g"), add("- Dataset a1", "- Dataset a2"))
    models = roles(summarizer=["s"], updater=[first, ops(add("## Goals", "- g"))], safety=[ALLOW])
    report = await FileMemory(models, store).update("dana", "acme", turn())
    assert (
        report.attempts[0].error
        == "op 1: anchor found 2 times (must occur exactly once): '- Dataset a1'"
    )
    assert "op 1: anchor found 2 times" in models["updater"].requests[1].last
    # the valid op 0 of the rejected batch was not applied on its own; the retry's op was, once
    assert report.ops == [add("## Goals", "- g")]
    assert report.file_after.count("- g\n") == 1


async def test_third_failure_writes_nothing(store: SQLiteStore) -> None:
    bad = [ops(add("## Nope", "- x")), "not json at all", ops(replace("absent", "y"))]
    models = roles(summarizer=["s"], updater=bad)  # no safety answers: the gate must not run
    report = await FileMemory(models, store).update("dana", "acme", turn())
    assert report.status == Status.REJECTED == "rejected-after-retries"
    assert [a.number for a in report.attempts] == [1, 2, 3]
    assert report.attempts[1].error is not None and report.attempts[1].error.startswith(
        "answer is not valid JSON"
    )
    assert report.attempts[2].error == "op 0: old not found: 'absent'"
    assert report.errors == [
        "updater gave up after 3 attempts; last error: op 0: old not found: 'absent'"
    ]
    assert report.ops == [] and report.file_after == report.file_before == SKELETON
    assert store.versions("dana", "acme") == []
    assert len(models["updater"].requests) == 3 and models["safety"].requests == []


async def test_model_errors_on_every_attempt_are_a_failure_not_a_rejection(
    store: SQLiteStore,
) -> None:
    models = roles(summarizer=["s"], updater=[RuntimeError("429 too many requests")] * 3)
    report = await FileMemory(models, store).update("dana", "acme", turn())
    assert report.status == Status.FAILED
    assert [c.error for c in report.calls if c.role == "updater"] == [
        "RuntimeError: 429 too many requests"
    ] * 3
    assert store.versions("dana", "acme") == []


async def test_empty_list_is_a_normal_unchanged_outcome(store: SQLiteStore) -> None:
    models = roles(summarizer=["Nothing worth remembering."], updater=['{"ops": []}'])
    report = await FileMemory(models, store).update("dana", "acme", turn("thanks!"))
    assert report.status == Status.UNCHANGED
    assert report.errors == [] and report.ops == [] and store.versions("dana", "acme") == []
    assert [c.role for c in report.calls] == ["summarizer", "updater"]


async def test_removing_a_section_heading_is_rejected(store: SQLiteStore) -> None:
    models = roles(
        summarizer=["s"], updater=[ops(replace("## Assets", "## Stuff")), ops(GOOD)], safety=[ALLOW]
    )
    report = await FileMemory(models, store).update("dana", "acme", turn())
    assert report.attempts[0].error == "op 0: removes or reorders the section heading '## Assets'"
    assert report.status == Status.WRITTEN and "## Assets" in report.file_after


async def test_constrained_anchors_limit_the_schema_to_the_files_own_lines(
    store: SQLiteStore,
) -> None:
    store.put("dana", "acme", SEEDED + "- unique line\n")
    models = roles(summarizer=["s"], updater=['{"ops": []}'])
    await FileMemory(models, store, constrain_anchors=True).update("dana", "acme", turn())
    schema = models["updater"].requests[0].schema
    assert schema == ops_schema(SEEDED + "- unique line\n")
    add_schema, replace_schema = schema["properties"]["ops"]["items"]["anyOf"]
    anchors = add_schema["properties"]["anchor"]["enum"]
    assert "- unique line" in anchors and "## Goals" in anchors
    assert "- Dataset a1" not in anchors  # occurs twice: could never apply
    assert (
        "## Goals" not in replace_schema["properties"]["old"]["enum"]
    )  # headings are not editable


async def test_unconstrained_schema_is_still_a_json_schema(store: SQLiteStore) -> None:
    models = roles(summarizer=["s"], updater=['```json\n{"ops": []}\n```'])
    report = await FileMemory(models, store).update("dana", "acme", turn())
    assert report.status == Status.UNCHANGED  # a fenced JSON answer still parses
    schema = models["updater"].requests[0].schema
    assert schema is not None and "enum" not in json.dumps(
        schema["properties"]["ops"]["items"]["anyOf"][0]["properties"]["anchor"]
    )


async def test_unscripted_calls_fail_loudly_in_the_report(store: SQLiteStore) -> None:
    models = roles(summarizer=[])
    report = await FileMemory(models, store).update("dana", "acme", turn())
    assert report.status == Status.FAILED
    assert report.calls[0].error is not None and ScriptExhausted.__name__ in report.calls[0].error


async def test_a_literal_newline_inside_an_op_string_still_parses(store: SQLiteStore) -> None:
    """Grammar-constrained local models may put a raw newline in a JSON string; the op is
    judged on its content (here: two lines under Goals), never lost as "not valid JSON"."""
    raw = '{"ops": [{"op": "add", "anchor": "## Goals", "text": "- Ship v2\n- by Friday"}]}'
    models = roles(summarizer=["s"], updater=[raw], safety=[ALLOW, ALLOW])
    report = await FileMemory(models, store).update("dana", "acme", turn())
    assert not any("not valid JSON" in (a.error or "") for a in report.attempts)
    assert report.attempts[0].ops == [
        {"op": "add", "anchor": "## Goals", "text": "- Ship v2\n- by Friday"}
    ]
    assert report.written and "## Goals\n- Ship v2\n- by Friday\n" in report.file_after
