"""The gate on stored outcomes: how often an unchanged commit passes, and how often a given
regression is caught, without running a model.

Check histories with M repeats each (a baseline made from `--repeat M`) hold M whole runs.
One trial draws `base + run` distinct repeat numbers, makes a baseline of the first `base`
and a run of the other `run`, and gates the run against that baseline: both sides come from
the same code, as on an unchanged commit. Whole repeats are drawn, never single outcomes, so
checks that fail together in a repeat (a lost fact fails every later check that needs it)
stay together. A `change` applied to the run side plays a regression.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memeval.baseline import Baseline, CheckHistory, RowKey
from memeval.errors import ConfigError
from memeval.gate import GateConfig, GateReport, compare_checks
from memeval.rundir.results import ScenarioMetrics

Change = Callable[[list[CheckHistory]], list[CheckHistory]]


def metrics_from_checks(checks: Sequence[CheckHistory]) -> list[ScenarioMetrics]:
    """The gated rates of each row, pooled over the checks' repeats (as grading counts them)."""
    rows: dict[RowKey, ScenarioMetrics] = {}
    for c in checks:
        row = rows.setdefault(c.row, ScenarioMetrics(scenario=c.scenario, system=c.system))
        row.repeats = max(row.repeats, len(c.outcomes))
        ratio = getattr(row, c.metric)
        ratio.total += c.graded
        ratio.passed += c.passed
    return list(rows.values())


def take(checks: Sequence[CheckHistory], repeats: Sequence[int]) -> list[CheckHistory]:
    """The checks as they were in the given repeats only."""
    return [c.model_copy(update={"outcomes": [c.outcomes[i] for i in repeats]}) for c in checks]


def stored_repeats(checks: Sequence[CheckHistory]) -> int:
    return min((len(c.outcomes) for c in checks), default=0)


@dataclass(frozen=True)
class Resampled:
    trials: int
    failed: int  # trials in which the gate found a regression
    reports: list[GateReport]

    @property
    def passed(self) -> int:
        return self.trials - self.failed


def resample(
    checks: Sequence[CheckHistory],
    base_repeats: int,
    run_repeats: int,
    *,
    trials: int = 100,
    config: GateConfig | None = None,
    seed: int = 0,
    change: Change | None = None,
) -> Resampled:
    """Gate `trials` runs of `run_repeats` against baselines of `base_repeats`, all drawn
    from the stored repeats of `checks` (see the module docstring)."""
    stored = stored_repeats(checks)
    if base_repeats < 1 or run_repeats < 1 or base_repeats + run_repeats > stored:
        raise ConfigError(
            f"cannot draw {base_repeats} + {run_repeats} distinct repeats from {stored} stored"
        )
    rng = random.Random(seed)
    reports = []
    for _ in range(trials):
        drawn = rng.sample(range(stored), base_repeats + run_repeats)
        base = take(checks, drawn[:base_repeats])
        run = take(checks, drawn[base_repeats:])
        if change is not None:
            run = change(run)
        baseline = Baseline(
            run_id="resampled",
            repeats=base_repeats,
            metrics=metrics_from_checks(base),
            checks=base,
        )
        reports.append(
            compare_checks(metrics_from_checks(run), run, baseline, config or GateConfig())
        )
    return Resampled(trials, sum(bool(r.regressions) for r in reports), reports)
