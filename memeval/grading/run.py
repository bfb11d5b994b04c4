"""Grade a saved run: checks, retention, the judge, human grades, metrics -> RunResults.

Reads only the saved run it is given; saving and showing the results is `publish`'s job.
Judge results already in the run's `verdicts.json` are reused (so a re-grade after human
grading calls no model); with a judge model, a stored judgement is reused only when it
succeeded, came from the same model and the same input.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memeval.grading import human
from memeval.grading.calibrate import calibrate, judge_calibration, scenario_controls
from memeval.grading.checks import question_checks, verdict_from_checks, write_checks
from memeval.grading.f1 import token_f1
from memeval.grading.judge import (
    DEFAULT_TIMEOUT_S,
    JudgeRequest,
    JudgeStrategy,
    run_judge,
    write_request,
)
from memeval.grading.judge_strategies import strategy_for
from memeval.grading.metrics import scenario_metrics
from memeval.grading.retention import ApplyOps, fact_retention, retention_checks
from memeval.grading.verdicts import effective, headline
from memeval.models.base import ChatModel
from memeval.rundir.record import TurnRecord
from memeval.rundir.results import (
    GRADES_FILE,
    CheckResult,
    JudgeCalibration,
    JudgeResult,
    RunResults,
    TurnVerdicts,
    Verdict,
)
from memeval.rundir.saved import SavedRun
from memeval.rundir.staleness import run_freshness
from memeval.scenario.schema import ResolvedScenario

JudgeKey = tuple[str, int, str, str]  # (scenario, repeat, turn, "question" | "write")


@dataclass(frozen=True)
class QuestionJob:
    """A question to put to the judge's strategy (its hash decides reuse)."""

    record: TurnRecord
    criterion: str
    check: Verdict
    input_hash: str


Job = QuestionJob | JudgeRequest


async def grade_run(
    run: SavedRun,
    judge: ChatModel | None = None,
    *,
    judge_writes: bool = False,
    rejudge: bool = False,
    concurrency: int = 4,
    timeout_s: float | None = DEFAULT_TIMEOUT_S,
    apply_ops: ApplyOps | None = None,
    grades: human.GradesFile | None = None,
    judge_scope: Callable[[TurnRecord], AbstractContextManager[Any]] | None = None,
    on_judged: Callable[[TurnRecord, int, int], None] | None = None,
    strategy: str | None = None,
    calibrate_judge: bool = True,
) -> RunResults:
    """Grade every turn of the run (nothing is written).

    `judge_writes` also judges write expectations against their `note`; `rejudge` ignores
    stored judgements. Human grades (`grades`, else the run's `grades.json`) apply last.
    `judge_scope(record)` wraps each judge call (tracing puts it under the turn's trace);
    `on_judged(record, done, total)` follows each judge call (progress). `strategy` names
    the judge's strategy (default: chosen for the judge model); `calibrate_judge` measures
    the judge on the control answers of the questions it graded.
    """
    prior = run.results if not rejudge else None
    previous = _stored_judgements(prior) if prior is not None else {}
    judge_model = judge.name if judge is not None else (prior.judge_model if prior else None)
    results = RunResults(run_id=run.run_id, graded_at=_now(), judge_model=judge_model)
    chosen = strategy_for(strategy, judge.name) if judge is not None else None
    pending: list[Awaitable[None]] = []
    judged: list[TurnRecord] = []
    limit = asyncio.Semaphore(max(1, concurrency))
    by_scenario: dict[str, list[TurnRecord]] = defaultdict(list)

    async def ask(job: Job, verdicts: TurnVerdicts, target: str, record: TurnRecord) -> None:
        assert judge is not None and chosen is not None
        async with limit:
            with judge_scope(record) if judge_scope else contextlib.nullcontext():
                if isinstance(job, QuestionJob):
                    result = await chosen.judge(
                        judge, job.record, job.criterion, job.check, timeout_s=timeout_s
                    )
                else:
                    result = await run_judge(judge, job, timeout_s=timeout_s)
        setattr(verdicts, "judge" if target == "question" else "write_judge", result)
        judged.append(record)
        if on_judged is not None:
            on_judged(record, len(judged), len(pending))

    for (name, repeat), records in sorted(run.units().items()):
        by_scenario[name].extend(records)
        scenario = run.scenario(name)
        files = [run.snapshot(r) for r in records]
        starts = [records[0].update.file_before, *files[:-1]]
        retention = [
            fact_retention(name, repeat, fact_id, fact, records, files, apply_ops)
            for fact_id, fact in scenario.facts.items()
        ]
        results.facts.extend(retention)
        for i, (record, file, before) in enumerate(zip(records, files, starts, strict=True)):
            verdicts = check_turn(record, scenario, file, before, retention_checks(retention, i))
            results.turns.append(verdicts)
            jobs = _judge_jobs(record, verdicts, before, file, judge_writes, chosen)
            for target, job in jobs:
                key = (name, repeat, record.turn, target)
                stored = previous.get(key)
                if judge is None or _reusable(stored, judge, job):
                    setattr(verdicts, "judge" if target == "question" else "write_judge", stored)
                elif job is not None:
                    pending.append(ask(job, verdicts, target, record))
    await asyncio.gather(*pending)
    if judge is not None and chosen is not None and calibrate_judge:
        results.judge_calibration = await _calibrate(
            run, results, judge, chosen, timeout_s, concurrency
        )
    elif prior is not None:
        results.judge_calibration = prior.judge_calibration
    _apply_grades(run.path, results, grades)
    for verdicts in results.turns:
        compose(verdicts)
    agreement = human.agreement(results.turns)
    freshness = run_freshness(run)
    for name, records in by_scenario.items():
        mine = [t for t in results.turns if t.scenario == name]
        results.metrics.append(
            scenario_metrics(name, records, mine, agreement.get(name), freshness)
        )
    return results


def grade_without_model(run: SavedRun) -> RunResults:
    """`grade_run` with no judge (stored judgements and human grades still apply): what an
    ungraded run shows, the deterministic checks. Usable from sync and async callers."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(grade_run(run))
    # called from async code: grade on a thread of its own rather than nest event loops
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, grade_run(run)).result()


def check_turn(
    record: TurnRecord,
    scenario: ResolvedScenario,
    file: str,
    before: str,
    retention: Sequence[CheckResult] = (),
) -> TurnVerdicts:
    """The deterministic verdicts of one turn (judge and human come later). Every turn with
    an expectation or with tracked facts to keep gets a write verdict: its own `expect`
    checks plus `retention` (no fact held and still expected was lost on this turn)."""
    verdicts = TurnVerdicts(
        scenario=record.scenario,
        repeat=record.repeat,
        index=record.index,
        turn=record.turn,
        session=record.session,
        kind=record.session_kind,
    )
    expect, question = record.expect, record.question
    own = write_checks(expect, scenario.facts, file, before) if expect is not None else []
    if expect is not None or retention:
        verdicts.write_checks = [*own, *retention]
        verdicts.write_check = verdict_from_checks(verdicts.write_checks)
        if expect is not None and not own and verdicts.write_check.verdict == "pass":
            # a note-only expectation is still the judge's or a human's to decide
            verdicts.write_check = verdict_from_checks(own)
    if question is not None:
        verdicts.question_type = question.type
        verdicts.question_tags = list(question.tags)
        if record.agent_error is not None:
            reason = f"the agent failed: {' '.join(record.agent_error.split())}"
            verdicts.question_check = Verdict(verdict="error", source="check", reason=reason)
        else:
            answer = record.answer or ""
            verdicts.question_checks = question_checks(question, answer, record.tool_calls)
            verdicts.question_check = verdict_from_checks(verdicts.question_checks)
            if question.answer_f1 is not None:
                verdicts.answer_f1 = round(token_f1(answer, question.answer_f1.gold), 4)
    compose(verdicts)
    return verdicts


def compose(verdicts: TurnVerdicts) -> None:
    """(Re)derive the effective write/question verdicts and the headline from the layers."""
    if verdicts.write_check is not None:
        verdicts.write = effective(verdicts.write_check, verdicts.write_judge, verdicts.write_human)
    if verdicts.question_check is not None:
        verdicts.question = effective(verdicts.question_check, verdicts.judge, verdicts.human)
    verdicts.final = headline(verdicts.write, verdicts.question)


async def _calibrate(
    run: SavedRun,
    results: RunResults,
    judge: ChatModel,
    strategy: JudgeStrategy,
    timeout_s: float | None,
    concurrency: int,
) -> JudgeCalibration:
    """The judge on the control answers of every question it graded in this run (the
    scenarios as saved in run.json)."""
    graded = {(t.scenario, t.turn) for t in results.turns if t.judge is not None}
    controls = [
        control
        for name, scenario in run.info.scenarios.items()
        for control in scenario_controls(scenario)
        if (name, control.turn.id) in graded
    ]
    outcome = await calibrate(
        controls, judge, strategy=strategy, concurrency=concurrency, timeout_s=timeout_s
    )
    return judge_calibration(outcome, judge.name, strategy.name)


def _judge_jobs(
    record: TurnRecord,
    verdicts: TurnVerdicts,
    before: str,
    file: str,
    judge_writes: bool,
    strategy: JudgeStrategy | None,
) -> list[tuple[str, Job | None]]:
    """What would be judged on this turn; the job is None where checks already decided, or
    no judge is given (the stored judgement, if any, is still shown)."""
    wanted: list[tuple[str, Job | None]] = []
    check = verdicts.question_check
    if record.question is not None and check is not None:
        criterion = record.question.criterion
        job = None
        if strategy is not None and check.verdict in ("pass", "na") and criterion:
            digest = strategy.input_hash(record, criterion, check)
            job = QuestionJob(record, criterion, check, digest)
        wanted.append(("question", job))
    check = verdicts.write_check
    note = record.expect.note if record.expect is not None else ""
    if check is not None and note:
        ok = judge_writes and check.verdict in ("pass", "na")
        wanted.append(("write", write_request(record, note, before, file) if ok else None))
    return wanted


def _reusable(stored: JudgeResult | None, judge: ChatModel, request: Job | None) -> bool:
    if stored is None or request is None:
        return request is None
    same_input = stored.input_hash == request.input_hash and stored.model == judge.name
    return same_input and stored.verdict != "error"


def _stored_judgements(prior: RunResults) -> dict[JudgeKey, JudgeResult]:
    stored: dict[JudgeKey, JudgeResult] = {}
    for t in prior.turns:
        if t.judge is not None:
            stored[(t.scenario, t.repeat, t.turn, "question")] = t.judge
        if t.write_judge is not None:
            stored[(t.scenario, t.repeat, t.turn, "write")] = t.write_judge
    return stored


def _apply_grades(run_dir: Path, results: RunResults, grades: human.GradesFile | None) -> None:
    path = run_dir / GRADES_FILE
    if grades is None:
        if not path.is_file():
            return
        grades = human.load_grades(path)
    human.check_against_run(grades, results.turns, str(path))
    index = human.grades_index(grades)
    for t in results.turns:
        t.human = index.get((t.scenario, t.repeat, t.turn, "question"))
        t.write_human = index.get((t.scenario, t.repeat, t.turn, "write"))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
