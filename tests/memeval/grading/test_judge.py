"""The LLM judge with a scripted model: what it sees, how failures are recorded, reuse."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from memeval.grading.judge import (
    DEFAULT_TIMEOUT_S,
    JUDGE_MAX_TOKENS,
    JUDGE_SCHEMA,
    REASON_CHARS,
    judge_deadline,
    parse_judgement,
)
from memeval.models.base import ChatResponse, ModelError
from memeval.models.scripted import ScriptedModel
from memeval.models.spec import parse_spec
from tests.memeval.rundirs import RunDirBuilder, grade_and_save, memory

PASS = '{"verdict": "pass", "reason": "cites 0.648 against 0.90"}'
FAIL = '{"verdict": "fail", "reason": "does not cite the target"}'


def scripted_judge(steps: list, name: str = "scripted:judge") -> ScriptedModel:
    return ScriptedModel(steps, name=name)


async def _late(*_: object) -> ChatResponse:
    await asyncio.sleep(5)
    return ChatResponse(content=PASS)


QUESTION = {
    "type": "memory-dependent",
    "criterion": "Says no, citing 0.648 against the 0.90 target.",
    "answer_matches": [["0.648"]],
}


def one_question_run(tmp_path: Path, answer: str = "No: 0.648 vs the 0.90 target.") -> Path:
    run = RunDirBuilder(tmp_path / "run")
    sc = run.scenario("book")
    sc.turn(
        "s1t1",
        file=memory(Goals=["- v2 scored 0.648 against the 0.90 target"]),
        expect={"note": "Records the score as a goal checkpoint."},
    )
    sc.turn(
        "s2q1",
        session="s2",
        kind="eval",
        user="Ready for prod?",
        answer=answer,
        memory_context="MEMORY: v2 scored 0.648 against the 0.90 target",
        tool_calls=[
            {"name": "query_spans", "arguments": {"project": "p"}, "result": {"rows": 812}}
        ],
        question=QUESTION,
    )
    return run.write()


async def test_the_judge_sees_criterion_message_memory_calls_and_answer(tmp_path: Path) -> None:
    usage = ChatResponse(content=PASS, prompt_tokens=100, completion_tokens=10, latency_s=0.2)
    judge = scripted_judge([usage])
    results = await grade_and_save(one_question_run(tmp_path), judge)
    turn = results.turn("book", 0, "s2q1")
    assert turn is not None and turn.question is not None and turn.judge is not None
    assert (turn.question.verdict, turn.question.source) == ("pass", "judge")
    assert turn.question.reason == "cites 0.648 against 0.90"
    assert turn.judge.model == "scripted:judge" and turn.judge.prompt_tokens == 100
    prompt = judge.requests[0].messages[-1]["content"]
    for seen in (
        QUESTION["criterion"],
        "Ready for prod?",
        "MEMORY: v2 scored",
        "query_spans",
        '"rows": 812',
        "No: 0.648 vs the 0.90 target.",
    ):
        assert seen in prompt
    assert [r.schema for r in judge.requests] == [JUDGE_SCHEMA]
    assert results.judge_model == "scripted:judge"


async def test_the_judge_asks_for_a_bounded_answer(tmp_path: Path) -> None:
    # the reason has a length a grammar can hold the model to, and the answer a token limit
    # for back ends that ignore it: a judge that runs on inside its reason ends, with a verdict
    judge = scripted_judge([PASS])
    await grade_and_save(one_question_run(tmp_path), judge)
    (request,) = judge.requests
    assert request.schema is not None
    assert request.schema["properties"]["reason"]["maxLength"] == REASON_CHARS
    assert request.max_tokens == JUDGE_MAX_TOKENS
    assert REASON_CHARS + 64 < JUDGE_MAX_TOKENS  # a reason of one-character tokens still fits


def test_a_reason_the_bound_ended_says_so() -> None:
    mark = f" …[at the {REASON_CHARS}-character bound: may be cut]"
    for cut in ("x" * REASON_CHARS, "fail " * (REASON_CHARS // 5 - 1) + "fail"):
        verdict = parse_judgement(json.dumps({"verdict": "fail", "reason": cut}))
        assert verdict == ("fail", cut + mark)
    short = "cites 0.648 against 0.90"
    assert parse_judgement(json.dumps({"verdict": "pass", "reason": short})) == ("pass", short)


async def test_a_judge_fail_overrides_passing_checks(tmp_path: Path) -> None:
    results = await grade_and_save(one_question_run(tmp_path), scripted_judge([FAIL]))
    turn = results.turn("book", 0, "s2q1")
    assert turn and turn.question and turn.question_check
    assert turn.question_check.verdict == "pass"
    assert (turn.question.verdict, turn.question.source) == ("fail", "judge")
    assert (turn.final.verdict, turn.final.source) == ("fail", "judge")


async def test_failed_checks_are_not_sent_to_the_judge(tmp_path: Path) -> None:
    judge = scripted_judge([])
    results = await grade_and_save(one_question_run(tmp_path, answer="Yes, ship it."), judge)
    turn = results.turn("book", 0, "s2q1")
    assert turn and turn.question and turn.judge is None and judge.requests == []
    assert (turn.question.verdict, turn.question.source) == ("fail", "check")


async def test_judge_failures_are_recorded_not_guessed(tmp_path: Path) -> None:
    for answer, expected in [
        ("I think it passes", "not JSON"),
        ('{"verdict": "maybe", "reason": "?"}', "no verdict pass|fail"),
        (ModelError("HTTP 429: rate limited"), "ModelError: HTTP 429: rate limited"),
        (None, "no content"),
    ]:
        run_dir = one_question_run(tmp_path / expected.replace(" ", "_").replace(":", ""))
        script = [answer] if answer is not None else [""]
        results = await grade_and_save(run_dir, scripted_judge(script))
        turn = results.turn("book", 0, "s2q1")
        assert turn and turn.judge and turn.question
        assert turn.judge.verdict == "error" and expected in (turn.judge.error or "")
        assert (turn.question.verdict, turn.question.source) == ("error", "judge")
        assert results.metrics[0].questions_error == 1
        assert results.metrics[0].memory_dependent.passed == 0


async def test_a_judge_that_hangs_times_out_as_an_error(tmp_path: Path) -> None:
    results = await grade_and_save(
        one_question_run(tmp_path), scripted_judge([_late]), timeout_s=0.05
    )
    turn = results.turn("book", 0, "s2q1")
    assert turn and turn.judge and turn.judge.verdict == "error"
    assert "timed out" in (turn.judge.error or "")


async def _queued(*_: object) -> ChatResponse:
    await asyncio.sleep(0.3)  # waits behind other calls, as on the embedded model's one worker
    return ChatResponse(content=PASS)


async def test_without_a_deadline_a_slow_judgement_is_waited_for(tmp_path: Path) -> None:
    for strategy in ("single", "clauses"):
        run_dir = one_question_run(tmp_path / strategy)
        steps = [_queued] * 4 if strategy == "single" else [_queued_yes] * 4
        results = await grade_and_save(
            run_dir, scripted_judge(steps), timeout_s=None, strategy=strategy
        )
        turn = results.turn("book", 0, "s2q1")
        assert turn and turn.judge and turn.judge.verdict == "pass", turn.judge


async def _queued_yes(*_: object) -> ChatResponse:
    await asyncio.sleep(0.3)
    return ChatResponse(content='{"answer": "yes"}')


def test_the_embedded_judge_gets_no_deadline_and_an_endpoint_does() -> None:
    assert judge_deadline(parse_spec("local:qwen2.5-coder-1.5b")) is None
    assert judge_deadline(parse_spec("openai:gpt-4o-mini")) == DEFAULT_TIMEOUT_S


async def test_stored_judgements_are_reused_and_errors_are_retried(tmp_path: Path) -> None:
    run_dir = one_question_run(tmp_path)
    await grade_and_save(run_dir, scripted_judge(["garbage"]))
    retried = scripted_judge([PASS])
    results = await grade_and_save(run_dir, retried)  # the stored error is asked again
    assert len(retried.requests) == 1
    assert results.turn("book", 0, "s2q1").judge.verdict == "pass"  # type: ignore[union-attr]

    no_calls = scripted_judge([])
    again = await grade_and_save(run_dir, no_calls)  # same model, same input: reused
    assert no_calls.requests == []
    offline = await grade_and_save(run_dir, None)  # no model at all: the stored result stands
    for res in (again, offline):
        turn = res.turn("book", 0, "s2q1")
        assert (
            turn
            and turn.question
            and (turn.question.verdict, turn.question.source)
            == (
                "pass",
                "judge",
            )
        )
    assert offline.judge_model == "scripted:judge"

    other = scripted_judge([FAIL], name="scripted:other-judge")  # another model judges anew
    assert (await grade_and_save(run_dir, other)).turn("book", 0, "s2q1").judge.verdict == "fail"  # type: ignore[union-attr]
    forced = scripted_judge([PASS], name="scripted:other-judge")
    await grade_and_save(run_dir, forced, rejudge=True)
    assert len(forced.requests) == 1


async def test_writes_are_judged_against_the_note_only_when_asked(tmp_path: Path) -> None:
    run_dir = one_question_run(tmp_path)
    judge = scripted_judge([PASS])
    results = await grade_and_save(run_dir, judge)  # judge_writes off: the question only
    assert len(judge.requests) == 1
    assert results.turn("book", 0, "s1t1").write_judge is None  # type: ignore[union-attr]

    judge = scripted_judge([FAIL])
    results = await grade_and_save(run_dir, judge, judge_writes=True)
    turn = results.turn("book", 0, "s1t1")
    assert turn and turn.write and turn.write_judge
    assert (turn.write.verdict, turn.write.source) == ("fail", "judge")
    prompt = judge.requests[0].messages[-1]["content"]
    assert "Records the score as a goal checkpoint." in prompt
    assert "+- v2 scored 0.648 against the 0.90 target" in prompt  # the diff of the write


def criterion_only_run(tmp_path: Path, agent_error: str | None = None) -> Path:
    run = RunDirBuilder(tmp_path / "run")
    run.scenario("book").turn(
        "q1",
        kind="eval",
        answer="" if agent_error else "Let me check the docs first.",
        agent_error=agent_error,
        question={"type": "memory-corruptible", "criterion": "Does not invent a dataset."},
    )
    return run.write()


async def test_a_criterion_without_checks_is_ungraded_until_judged(tmp_path: Path) -> None:
    run_dir = criterion_only_run(tmp_path)
    results = await grade_and_save(run_dir, None)
    turn = results.turn("book", 0, "q1")
    assert turn and turn.question and turn.question.verdict == "na"
    metrics = results.metrics[0]
    assert str(metrics.memory_corruptible) == "0/0" and metrics.questions_ungraded == 1

    results = await grade_and_save(run_dir, scripted_judge([PASS]))
    turn = results.turn("book", 0, "q1")
    assert (
        turn
        and turn.question
        and (turn.question.verdict, turn.question.source)
        == (
            "pass",
            "judge",
        )
    )
    assert str(results.metrics[0].memory_corruptible) == "1/1"


async def test_an_agent_failure_is_an_error_not_a_judgement(tmp_path: Path) -> None:
    judge = scripted_judge([])
    results = await grade_and_save(criterion_only_run(tmp_path, "TimeoutError: 300 s"), judge)
    turn = results.turn("book", 0, "q1")
    assert turn and turn.question and judge.requests == []
    assert (turn.question.verdict, turn.question.source) == ("error", "check")
    assert turn.question.reason == "the agent failed: TimeoutError: 300 s"
    assert str(results.metrics[0].memory_corruptible) == "0/1"


async def test_a_judgement_the_response_cache_served_says_so(tmp_path: Path) -> None:
    import pandas as pd

    from memeval.rundir.saved import SavedRun
    from memeval.tables import write_tables

    for cached in (False, True):
        run_dir = one_question_run(tmp_path / f"cached-{cached}")
        judge = scripted_judge([ChatResponse(content=PASS, cached=cached, latency_s=0.2)])
        results = await grade_and_save(run_dir, judge)
        turn = results.turn("book", 0, "s2q1")
        assert turn and turn.judge and turn.judge.verdict == "pass"
        assert turn.judge.cached is cached
        write_tables(SavedRun.open(run_dir), results)
        calls = pd.read_csv(run_dir / "llm_calls.csv")
        assert calls.loc[calls["role"] == "judge", "cached"].tolist() == [cached]
