"""Control answers (DESIGN §7.4): prove that a question's checks and the judge grade what they
claim.

Every control answer of a question has a known verdict. Calibration grades each one exactly as
a run grades a live answer — the deterministic checks on the answer and its tool calls (their
results come from the scenario's fixtures), and the judge on the criterion — and compares.
A control the checks contradict is a defect of the question; the judge's agreement with the
controls is its measured accuracy, reported beside its verdicts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from memeval.grading.checks import question_checks, verdict_from_checks
from memeval.grading.judge import DEFAULT_TIMEOUT_S, JudgeStrategy
from memeval.grading.judge_strategies import strategy_for
from memeval.models.base import ChatModel
from memeval.rundir.record import ToolCallRecord, TurnRecord
from memeval.rundir.results import ControlJudgement, JudgeCalibration, JudgeResult, Verdict
from memeval.scenario.schema import ControlAnswer, ResolvedScenario, ResolvedSession, TurnSpec
from memeval.tools import FixtureTools

Known = Literal["pass", "fail"]


@dataclass(frozen=True)
class Control:
    """One control answer of one question, as the record a run would have saved for it."""

    scenario: str
    session: ResolvedSession
    turn: TurnSpec
    known: Known
    index: int  # position in the question's `pass` or `fail` list
    answer: ControlAnswer

    @property
    def label(self) -> str:
        return f"{self.known}[{self.index}]"

    def record(self, memory: str | None = None) -> TurnRecord:
        """A turn record answering the question with this control; tool results come from
        the session's fixture tools, as they would for a live agent."""
        tools = FixtureTools(self.session.tools)
        calls = [
            ToolCallRecord(
                id=f"control_{i}",
                name=call.name,
                arguments=call.arguments,
                result=tools.call(call.name, call.arguments),
            )
            for i, call in enumerate(self.answer.tool_calls)
        ]
        return TurnRecord(
            scenario=self.scenario,
            index=0,
            session=self.session.id,
            session_index=0,
            session_kind="eval",
            source=self.session.source,
            turn=self.turn.id,
            user_message=self.turn.user,
            messages=[
                {"role": "user", "content": self.turn.user},
                {"role": "assistant", "content": self.answer.answer},
            ],
            answer=self.answer.answer,
            tool_calls=calls,
            memory_context=memory,
            question=self.turn.question,
        )


def controls_of(session: ResolvedSession, turn: TurnSpec, scenario: str) -> Iterator[Control]:
    question = turn.question
    if question is None or question.controls is None:
        return
    for known in ("pass", "fail"):
        for i, answer in enumerate(question.controls.answers(known)):
            yield Control(scenario, session, turn, known, i, answer)


def scenario_controls(scenario: ResolvedScenario) -> list[Control]:
    return [
        control
        for session in scenario.sessions
        for turn in session.turns
        for control in controls_of(session, turn, scenario.name)
    ]


@dataclass
class ControlResult:
    control: Control
    check: Verdict
    judge: JudgeResult | None = None

    @property
    def checks_right(self) -> bool | None:
        """None when no check decides the control (`na`: the question has no check for this
        answer, as on imported questions only the judge grades); it is left to the judge."""
        if self.check.verdict == "na":
            return None
        return self.check.verdict == self.control.known

    @property
    def judge_right(self) -> bool | None:
        """None when the judge was not asked or could not grade."""
        if self.judge is None or self.judge.verdict == "error":
            return None
        if self.control.known == "pass":
            return self.judge.verdict == "pass"
        return self.judge.verdict in ("fail", "not-attempted")


def check_control(control: Control) -> Verdict:
    question = control.turn.question
    assert question is not None
    record = control.record()
    return verdict_from_checks(question_checks(question, record.answer or "", record.tool_calls))


async def calibrate(
    controls: Sequence[Control],
    judge: ChatModel | None = None,
    *,
    strategy: JudgeStrategy | None = None,
    concurrency: int = 1,
    timeout_s: float | None = DEFAULT_TIMEOUT_S,
) -> list[ControlResult]:
    """Grade every control with the checks, and with the judge when one is given (always:
    the judge sees every control, including those the checks already failed)."""
    results = [ControlResult(c, check_control(c)) for c in controls]
    if judge is None:
        return results
    chosen = strategy or strategy_for(None, judge.name)
    limit = asyncio.Semaphore(max(1, concurrency))

    async def ask(result: ControlResult) -> None:
        control = result.control
        question = control.turn.question
        assert question is not None
        record = control.record(control.session.reference_memory)
        async with limit:
            result.judge = await chosen.judge(
                judge, record, question.criterion, result.check, timeout_s=timeout_s
            )

    await asyncio.gather(*(ask(r) for r in results))
    return results


def judge_calibration(
    results: Iterable[ControlResult], model: str = "", strategy: str = ""
) -> JudgeCalibration:
    """The judge's verdict on every control it was asked about, against the known verdict
    (accuracy, precision on fail and could-not-grade are derived from these)."""
    judged = [
        ControlJudgement(
            scenario=r.control.scenario,
            turn=r.control.turn.id,
            known=r.control.known,
            index=r.control.index,
            judge=r.judge.verdict,
        )
        for r in results
        if r.judge is not None
    ]
    return JudgeCalibration(model=model, strategy=strategy, judged=judged)


@dataclass
class Calibration:
    """What `memeval scenarios calibrate` prints: every control's verdicts, the defects the
    checks show, and the judge's numbers (None without a judge)."""

    results: list[ControlResult]
    judge: JudgeCalibration | None = None

    @property
    def defects(self) -> list[ControlResult]:
        """Controls whose known verdict the checks contradict (a defect of the question)."""
        return [r for r in self.results if r.checks_right is False]


def load_controls(targets: Sequence[str]) -> list[Control]:
    """Every control of the named scenarios (a question reached twice is calibrated once)."""
    from memeval.scenario.loader import resolve

    seen: set[tuple[str, str, str, int]] = set()
    controls: list[Control] = []
    for target in targets:
        for control in scenario_controls(resolve(target)):
            key = (control.session.source, _own_id(control), control.known, control.index)
            if key not in seen:
                seen.add(key)
                controls.append(control)
    return controls


def _own_id(control: Control) -> str:
    """The turn id in the file it was written in (combined runs prefix included ids)."""
    return control.turn.id.rsplit("/", 1)[-1]


async def run_calibration(
    controls: Sequence[Control],
    judge: ChatModel | None,
    *,
    strategy: str | None = None,
    timeout_s: float | None = DEFAULT_TIMEOUT_S,
) -> Calibration:
    chosen = strategy_for(strategy, judge.name) if judge is not None else None
    results = await calibrate(controls, judge, strategy=chosen, timeout_s=timeout_s)
    summary = None
    if judge is not None and chosen is not None:
        summary = judge_calibration(results, judge.name, chosen.name)
    return Calibration(results=results, judge=summary)
