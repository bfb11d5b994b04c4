"""Graded results of a run: the `verdicts.json` every later view (tables, report, gate) reads.

Grading writes `verdicts.json` into the run directory with the judge's answers included, so
`memeval report` and `memeval gate` never call a model. Names follow the results contract;
additions beyond it (all optional, all documented on the fields): `write_check`/
`question_check` (the deterministic verdicts before any override), `write_judge`/`write_human`
(the same layers for write expectations), `FactRetention.expected_from`/`until`/`turns`,
`ScenarioMetrics` counters `turns`, `questions_error`, `questions_ungraded`,
`rejected_updates`, `failed_updates`, `questions_not_attempted`, the judge's accounting
(tokens, latency, input hash) on `JudgeResult`, `Verdict.not_attempted` and
`RunResults.judge_calibration` (the judge's accuracy on the graded questions' controls).

The judge has three outcomes: pass, fail and "not-attempted" (the answer declines, says it
does not know, or asks back instead of answering). A not-attempted answer is a failed
question — never an ungraded "na" — and stays marked as such wherever it is shown.

Precedence of the effective verdict (`write`, `question`): human > judge > check, except that
failed checks stand unless a human says otherwise; a judge only decides when checks passed
or there were none. A question or write with nothing to check and no judge/human is "na"
(ungraded) and left out of the pass/total counts.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, ValidationError

from memeval.errors import RunDirError

RESULTS_SCHEMA_VERSION = 1
VERDICTS_FILE = "verdicts.json"
GRADES_FILE = "grades.json"

VerdictValue = Literal["pass", "fail", "na", "error"]
Source = Literal["check", "judge", "human"]
CellState = Literal["absent", "present", "missing", "superseded", "lost"]


class Verdict(BaseModel):
    """One verdict and who gave it. `evidence` holds the lines that justify it."""

    verdict: VerdictValue
    source: Source = "check"
    reason: str = ""
    evidence: list[str] = Field(default_factory=list)
    not_attempted: bool = False  # a fail because the answer declined or asked back (judge)

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"


class CheckResult(BaseModel):
    """One deterministic check, e.g. "records:seventy-rows", "answer_matches[0]", "unchanged"."""

    name: str
    passed: bool
    evidence: str = ""  # the matching line, or what was missing


JudgeVerdict = Literal["pass", "fail", "not-attempted", "error"]


class JudgeResult(BaseModel):
    """What the LLM judge said. "not-attempted": the answer declined or asked back instead of
    answering (a fail of the question). "error" means the judge failed (see `error`)."""

    verdict: JudgeVerdict
    reason: str = ""
    error: str | None = None
    model: str = ""
    input_hash: str = ""  # sha256 of the judge's input: reuse only when the input is the same
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0  # of prompt_tokens, served by the back end's prefix cache
    latency_s: float = 0.0
    cached: bool = False  # every call of this judgement was served by the response cache


class HumanGrade(BaseModel):
    verdict: Literal["pass", "fail"]
    note: str = ""
    grader: str = ""
    graded_at: str = ""  # ISO 8601


class TurnVerdicts(BaseModel):
    """Every verdict about one turn of one scenario repeat.

    `write`/`question` are the effective verdicts (None when the turn has no expect/question);
    `final` is the turn's headline: a fail or error in either wins, else pass, else "na".
    """

    scenario: str
    repeat: int = 0
    system: str | None = None  # the memory system, when the run compares several
    index: int
    turn: str
    session: str
    kind: Literal["seed", "eval"]
    write: Verdict | None = None
    write_checks: list[CheckResult] = Field(default_factory=list)
    write_check: Verdict | None = None  # the checks alone, before judge/human
    write_judge: JudgeResult | None = None  # only with judge_writes (against expect.note)
    write_human: HumanGrade | None = None
    question: Verdict | None = None
    question_type: str | None = None  # "memory-dependent" | "memory-corruptible"
    question_checks: list[CheckResult] = Field(default_factory=list)
    question_check: Verdict | None = None  # the checks alone, before judge/human
    answer_f1: float | None = None  # token F1 against the question's gold answer, when it has one
    question_tags: list[str] = Field(default_factory=list)  # the question's tags (categories)
    judge: JudgeResult | None = None
    human: HumanGrade | None = None
    final: Verdict = Field(default_factory=lambda: Verdict(verdict="na"))


class Culprit(BaseModel):
    """What removed a fact: an edit op (with its text), the compaction, or unknown."""

    kind: Literal["op", "compaction", "unknown"]
    op_index: int | None = None
    op: dict[str, Any] | None = None
    excerpt: str = ""  # the line holding the fact before it went (or why it is unknown)


class FactLoss(BaseModel):
    turn: str
    index: int
    culprit: Culprit


class FactRetention(BaseModel):
    """One fact across one scenario repeat; `cells[i]` is its state after turn `turns[i]`."""

    scenario: str
    repeat: int = 0
    fact: str
    first_present: str | None = None
    absent_while_expected: list[str] = Field(default_factory=list)
    losses: list[FactLoss] = Field(default_factory=list)
    cells: list[CellState] = Field(default_factory=list)
    turns: list[str] = Field(default_factory=list)  # turn ids, aligned with cells
    expected_from: str | None = None  # the first turn whose expect.records names the fact
    until: str | None = None  # from the fact: superseded from this turn's snapshot on


class Ratio(BaseModel):
    passed: int = 0
    total: int = 0

    @property
    def rate(self) -> float | None:
        return self.passed / self.total if self.total else None

    def __str__(self) -> str:
        return f"{self.passed}/{self.total}"


class Latency(BaseModel):
    """Pipeline (memory update) latency over a set of turns, in seconds."""

    n: int = 0
    p50_s: float | None = None
    p95_s: float | None = None


class ScenarioMetrics(BaseModel):
    """Per-scenario numbers, pooled over repeats (the gate compares these); in a run of several
    memory systems, one row per (scenario, system)."""

    scenario: str
    system: str | None = None  # the memory system, when the run compares several
    repeats: int = 1
    turns: int = 0
    write_match: Ratio = Field(default_factory=Ratio)
    memory_dependent: Ratio = Field(default_factory=Ratio)
    memory_corruptible: Ratio = Field(default_factory=Ratio)
    questions_error: int = 0  # questions whose final verdict is "error" (agent or judge failed)
    questions_ungraded: int = 0  # "na": no checks and no judge or human verdict (not in totals)
    questions_not_attempted: int = 0  # failed because the answer declined or asked back
    compactions: int = 0
    compactions_reached_target: int = 0
    dropped_writes: int = 0
    rejected_updates: int = 0  # the updater never produced a batch that applied
    failed_updates: int = 0  # status failed / skipped-safety-unavailable
    blocked_ops: int = 0
    model_calls_per_turn: float = 0.0
    tokens_per_turn: float = 0.0
    pipeline_latency: Latency = Field(default_factory=Latency)  # turns without compaction
    pipeline_latency_compaction: Latency = Field(default_factory=Latency)  # turns with one
    wall_s: float = 0.0
    judge_human_agreement: Ratio | None = None  # when both a judge and a human graded
    # --async-memory: turns that read memory, reads that missed an update still in flight,
    # and how long after the agent's answer each update landed (empty without async memory)
    memory_reads: int = 0
    stale_reads: int = 0
    update_lag: Latency = Field(default_factory=Latency)

    @property
    def label(self) -> str:
        """`book-summary`, or `book-summary · retrieval` in a run of several systems."""
        return self.scenario if self.system is None else f"{self.scenario} · {self.system}"


class ControlJudgement(BaseModel):
    """The judge's verdict on one control answer (`index` in the question's `known` list)."""

    scenario: str
    turn: str
    known: Literal["pass", "fail"]
    index: int
    judge: JudgeVerdict

    @property
    def right(self) -> bool | None:
        """None when the judge could not grade it; "fail" and "not-attempted" are both right
        on a known-fail control."""
        if self.judge == "error":
            return None
        return self.judge == "pass" if self.known == "pass" else self.judge != "pass"


class JudgeCalibration(BaseModel):
    """The judge's verdicts on the control answers of a set of questions, against their known
    verdicts; every count is derived from `judged`, so shards of a run merge by union."""

    model: str = ""
    strategy: str = ""
    judged: list[ControlJudgement] = Field(default_factory=list)

    LOW_TRUST_BELOW: ClassVar[float] = 0.9

    @property
    def questions(self) -> int:
        return len({(j.scenario, j.turn) for j in self.judged})

    @property
    def controls(self) -> int:
        return len(self.judged)

    @property
    def correct(self) -> int:
        return sum(j.right is True for j in self.judged)

    @property
    def could_not_grade(self) -> int:
        return sum(j.right is None for j in self.judged)

    @property
    def said_fail(self) -> int:
        return sum(j.judge in ("fail", "not-attempted") for j in self.judged)

    @property
    def said_fail_right(self) -> int:
        return sum(j.judge in ("fail", "not-attempted") and j.known == "fail" for j in self.judged)

    @property
    def not_attempted(self) -> int:
        return sum(j.judge == "not-attempted" for j in self.judged)

    @property
    def misjudged(self) -> list[ControlJudgement]:
        """The controls the judge got wrong or could not grade."""
        return [j for j in self.judged if j.right is not True]

    @property
    def graded(self) -> int:
        return self.controls - self.could_not_grade

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.graded if self.graded else None

    @property
    def precision_on_fail(self) -> float | None:
        return self.said_fail_right / self.said_fail if self.said_fail else None

    @property
    def low_trust(self) -> bool:
        """Judge verdicts are low-trust when the judge got under 90% of the controls right
        (or could grade none)."""
        return self.accuracy is None or self.accuracy < self.LOW_TRUST_BELOW


def merge_calibrations(parts: list[JudgeCalibration | None]) -> JudgeCalibration | None:
    """One calibration from several (shards of a run): the union of their judged controls."""
    given = [p for p in parts if p is not None]
    if not given:
        return None
    seen: dict[tuple[str, str, str, int], ControlJudgement] = {}
    for part in given:
        for j in part.judged:
            seen.setdefault((j.scenario, j.turn, j.known, j.index), j)
    return JudgeCalibration(
        model=given[0].model, strategy=given[0].strategy, judged=list(seen.values())
    )


class RunResults(BaseModel):
    schema_version: int = RESULTS_SCHEMA_VERSION
    run_id: str
    graded_at: str = ""
    judge_model: str | None = None
    judge_calibration: JudgeCalibration | None = None  # on the judged questions' controls
    turns: list[TurnVerdicts] = Field(default_factory=list)
    facts: list[FactRetention] = Field(default_factory=list)
    metrics: list[ScenarioMetrics] = Field(default_factory=list)

    def metrics_for(self, scenario: str) -> ScenarioMetrics | None:
        return next((m for m in self.metrics if m.scenario == scenario), None)

    def turn(self, scenario: str, repeat: int, turn: str) -> TurnVerdicts | None:
        for t in self.turns:
            if t.scenario == scenario and t.repeat == repeat and t.turn == turn:
                return t
        return None


def load_results(run_dir: Path) -> RunResults:
    """Read `verdicts.json`; a missing or unreadable file is a one-line RunDirError."""
    path = Path(run_dir) / VERDICTS_FILE
    if not path.is_file():
        raise RunDirError(
            f"{run_dir}: no {VERDICTS_FILE} (the run is not graded); run `memeval grade {run_dir}`"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise RunDirError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(data, dict) or data.get("schema_version") != RESULTS_SCHEMA_VERSION:
        version = data.get("schema_version") if isinstance(data, dict) else None
        raise RunDirError(
            f"{path}: schema_version {version!r} is not supported (this memeval reads "
            f"{RESULTS_SCHEMA_VERSION})"
        )
    try:
        return RunResults.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise RunDirError(f"{path}: invalid at {where}: {first['msg']}") from exc


def save_results(run_dir: Path, results: RunResults) -> Path:
    """Atomically (re)write `verdicts.json`."""
    path = Path(run_dir) / VERDICTS_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(results.model_dump_json(indent=2), encoding="utf-8")
    os.replace(tmp, path)
    return path
