"""'Stored, not served': a question's needed fact held by the memory but never shown to the
agent, told apart from a fact never stored and from one served but not used."""

from __future__ import annotations

import asyncio
from pathlib import Path

from memeval.grading.served import question_reach
from memeval.rundir.saved import SavedRun
from tests.memeval.rundirs import RunDirBuilder, grade_and_save

STORE = "- Datasets have 70 rows.\n- The eval set lives in project agent-prod.\n"
QUESTION = {
    "type": "memory-dependent",
    "criterion": "Says 70 rows.",
    "answer_matches": [["70"]],
    "facts": ["rows"],
}


def reach_of(tmp_path: Path, **eval_turn: object) -> list[object]:
    run = RunDirBuilder(tmp_path / "run", memory="retrieval")
    sc = run.scenario("s", facts={"rows": {"match": ["70 rows"]}})
    sc.turn("t1", file=STORE)
    sc.turn("q1", session="s2", kind="eval", question=QUESTION, **eval_turn)  # type: ignore[arg-type]
    run_dir = run.write()
    results = asyncio.run(grade_and_save(run_dir))
    return list(question_reach(SavedRun.open(run_dir), results))


def test_a_fact_in_the_store_but_not_in_the_injected_text_is_stored_not_served(
    tmp_path: Path,
) -> None:
    (row,) = reach_of(
        tmp_path,
        answer="I don't know how many rows.",
        memory_context="Facts remembered:\n- The eval set lives in project agent-prod.",
    )
    assert row.verdict == "fail"
    assert row.reach == "stored, not served"
    assert row.missing == ("rows",)
    assert row.stored_not_served


def test_a_fact_never_stored_is_not_stored(tmp_path: Path) -> None:
    run = RunDirBuilder(tmp_path / "run", memory="retrieval")
    sc = run.scenario("s", facts={"rows": {"match": ["70 rows"]}})
    sc.turn("t1", file="- The eval set lives in project agent-prod.\n")
    sc.turn("q1", session="s2", kind="eval", question=QUESTION, answer="No idea.")
    results = asyncio.run(grade_and_save(run.write()))
    (row,) = question_reach(SavedRun.open(tmp_path / "run"), results)
    assert (row.reach, row.missing, row.stored_not_served) == ("not stored", ("rows",), False)


def test_a_memory_search_result_counts_as_served(tmp_path: Path) -> None:
    (row,) = reach_of(
        tmp_path,
        answer="Not sure.",
        memory_context="## Conventions\n",
        tool_calls=[
            {
                "id": "c1",
                "name": "search_memory",
                "arguments": {"query": "rows"},
                "result": {"results": ["Datasets have 70 rows."]},
            }
        ],
    )
    assert row.verdict == "fail"
    assert row.reach == "served"  # served by the memory's own tool, then not used
    assert not row.stored_not_served


def test_a_passed_question_is_never_counted_as_stored_not_served(tmp_path: Path) -> None:
    (row,) = reach_of(tmp_path, answer="Use 70 rows.", memory_context="nothing relevant")
    assert row.verdict == "pass"
    assert row.reach == "stored, not served"  # the agent got it right without being shown it
    assert not row.stored_not_served
