"""A baseline: what a graded run scored, check by check, and what produced it.

`memeval gate RUN --write-baseline FILE` saves one as a small JSON to commit beside the
prompts. It holds the run's per-row metrics (a row is a scenario, or a (scenario, memory
system) pair in a run of several systems), every check's outcome in each repeat (a check is
one turn's write expectation or question: its pass history across the baseline's repeats is
what tells a flaky check from a stable one), the command that made the run and the run's
fingerprint (memeval.rundir.fingerprint).

It also keeps each scenario's pipeline health counts (memory updates failed, model calls
errored: memeval.health), so the gate can fail a run whose pipeline broke more often.

Files written by older memeval versions have no `checks`, `command`, `fingerprint` or
`health`; they still load, and the gate says what it cannot tell without them.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from memeval.errors import ConfigError, RunDirError
from memeval.health import HealthCounts, health_counts, run_health
from memeval.rundir.fingerprint import Fingerprint
from memeval.rundir.results import RunResults, ScenarioMetrics
from memeval.rundir.saved import SavedRun

# How a verdict counts in a pass history: passing, failing, or not graded (left out, as the
# metrics leave "na" out of their totals). A new verdict value gets its place here.
PASSING = frozenset({"pass"})
FAILING = frozenset({"fail", "error"})

RowKey = tuple[str, str | None]  # (scenario, memory system or None in a one-system run)
CheckKey = tuple[str, str | None, str, str]  # (scenario, system, turn, kind)


class CheckHistory(BaseModel):
    """One check's verdict in each repeat of a run, in repeat order."""

    scenario: str
    system: str | None = None
    turn: str
    index: int = 0  # the turn's position in its scenario (for ordering)
    kind: str  # "write" or "question" (a new kind of gated check adds a value)
    metric: str  # the metric it counts in: write_match, memory_dependent, memory_corruptible
    outcomes: list[str] = Field(default_factory=list)  # verdict values, one per repeat

    @property
    def key(self) -> CheckKey:
        return (self.scenario, self.system, self.turn, self.kind)

    @property
    def row(self) -> RowKey:
        return (self.scenario, self.system)

    @property
    def passed(self) -> int:
        return sum(v in PASSING for v in self.outcomes)

    @property
    def graded(self) -> int:
        return sum(v in PASSING or v in FAILING for v in self.outcomes)

    @property
    def flaky(self) -> bool:
        """Both passed and failed across the repeats."""
        return 0 < self.passed < self.graded

    @property
    def label(self) -> str:
        return f"{self.turn} {self.kind}"

    def history(self) -> str:
        """e.g. "3/5 pass" (or the single verdict with one repeat)."""
        if len(self.outcomes) == 1:
            return self.outcomes[0]
        return f"{self.passed}/{self.graded} pass"


class Baseline(BaseModel):
    """A small committed file of metrics, check histories and provenance."""

    schema_version: int = 1
    kind: Literal["memeval-baseline"] = "memeval-baseline"
    run_id: str
    created_at: str = ""
    command: list[str] = Field(default_factory=list)  # the argv of the run it was made from
    repeats: int = 1
    fingerprint: Fingerprint | None = None  # None: made before memeval recorded one
    metrics: list[ScenarioMetrics] = Field(default_factory=list)
    checks: list[CheckHistory] = Field(default_factory=list)  # empty in old baseline files
    # per scenario: failed memory updates and model-call errors; None in old baseline files
    # (and from a verdicts.json, which has no turn records)
    health: list[HealthCounts] | None = None

    def checks_for(self, row: RowKey, metric: str) -> dict[CheckKey, CheckHistory]:
        return {c.key: c for c in self.checks if c.row == row and c.metric == metric}


def metric_of(kind: str, question_type: str | None) -> str:
    """The gated metric a check counts in."""
    if kind == "write":
        return "write_match"
    return "memory_corruptible" if question_type == "memory-corruptible" else "memory_dependent"


def row_key(metrics: ScenarioMetrics) -> RowKey:
    return (metrics.scenario, metrics.system)


def check_histories(results: RunResults) -> list[CheckHistory]:
    """Every check of a graded run with its verdict per repeat, in scenario and turn order."""
    found: dict[CheckKey, CheckHistory] = {}
    by_repeat: dict[CheckKey, list[tuple[int, str]]] = defaultdict(list)
    for t in results.turns:
        for kind, verdict in (("write", t.write), ("question", t.question)):
            if verdict is None:
                continue
            key = (t.scenario, t.system, t.turn, kind)
            if key not in found:
                found[key] = CheckHistory(
                    scenario=t.scenario,
                    system=t.system,
                    turn=t.turn,
                    index=t.index,
                    kind=kind,
                    metric=metric_of(kind, t.question_type),
                )
            by_repeat[key].append((t.repeat, verdict.verdict))
    for key, history in found.items():
        history.outcomes = [v for _, v in sorted(by_repeat[key])]
    return list(found.values())


def baseline_from_run(run: SavedRun) -> Baseline:
    """The baseline a graded run makes (also how a run directory is read as a baseline)."""
    results = run.graded()
    return Baseline(
        run_id=run.run_id,
        command=list(run.info.argv),
        repeats=max((m.repeats for m in results.metrics), default=1),
        fingerprint=run.info.fingerprint,
        metrics=results.metrics,
        checks=check_histories(results),
        health=health_counts(run_health(run)),
    )


def write_baseline(run: SavedRun, path: Path) -> Path:
    """Save a graded, complete run as a baseline JSON (refuses a partial run: its missing
    turns would read as checks that disappeared)."""
    if run.info.status != "complete":
        raise RunDirError(
            f"{run.path}: the run is {run.info.status}; a baseline needs a complete run "
            f"(finish it with `memeval run --resume {run.path}`)"
        )
    baseline = baseline_from_run(run)
    baseline.created_at = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    Path(path).write_text(baseline.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return Path(path)


def baseline_warnings(run: SavedRun) -> list[str]:
    """What a reader of a baseline made from `run` should know about that run."""
    info, found = run.info, []
    if info.fingerprint is None:
        found.append(
            "the run has no fingerprint (made by an older memeval): the baseline cannot be "
            "checked against the code; make it from a run of this memeval"
        )
    elif info.fingerprint.cache is not None and info.fingerprint.cache.hits:
        cache = info.fingerprint.cache
        found.append(
            f"{cache.hits} of {cache.calls} calls of the run were served by the response cache"
        )
    if info.config.repeat == 1:
        found.append(
            "one repeat: with this baseline the gate cannot tell a flaky check from a "
            "regression (README: CI gate)"
        )
    return found


def load_baseline(spec: Path) -> tuple[str, Baseline]:
    """A graded run directory, a verdicts.json or a baseline JSON -> (label, baseline)."""
    spec = Path(spec)
    if spec.is_dir():
        return str(spec), baseline_from_run(SavedRun.open(spec))
    if not spec.is_file():
        raise ConfigError(f"--baseline {spec}: no such run directory or baseline JSON")
    try:
        data = json.loads(spec.read_text(encoding="utf-8"))
        if isinstance(data, dict) and "turns" in data and "kind" not in data:
            results = RunResults.model_validate(data)  # a verdicts.json: no provenance
            baseline = Baseline(
                run_id=results.run_id,
                repeats=max((m.repeats for m in results.metrics), default=1),
                metrics=results.metrics,
                checks=check_histories(results),
            )
            return str(spec), baseline
        baseline = Baseline.model_validate(data)
    except (ValueError, ValidationError) as exc:
        first = str(exc).splitlines()[0]
        raise ConfigError(
            f"--baseline {spec}: not a baseline JSON ({first}); make one with "
            "`memeval gate RUN_DIR --write-baseline FILE`"
        ) from None
    return f"{spec} (run {baseline.run_id})", baseline
