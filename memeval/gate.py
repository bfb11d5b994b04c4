"""The regression gate: compare a graded run with a baseline and fail on drops beyond noise.

Gated metrics are pass rates per row (a scenario, or a (scenario, memory system) pair):
write-match, memory-dependent and memory-corruptible. A metric's checks (each turn's write
expectation or question) are matched with the baseline's by (scenario, system, turn, kind).

- One repeat on both sides: there is no spread to measure, so any drop beyond `max_drop`
  (default 0: one fewer passing check) is a regression. This assumes re-runs are exact.
- Repeats on either side, baseline with per-check histories: a check that both passed and
  failed across the baseline's repeats is *flaky*; flaky checks are listed and never fail
  the gate alone. A metric regresses when (1) its pooled rate dropped by more than
  `max_drop`, (2) at least one check the baseline passed in every repeat now fails, and
  (3) the exact one-sided test stratified by check (memeval.noise) gives p < `alpha`:
  the drop is beyond what the baseline's own spread explains.
- Repeats, baseline without histories (written by an older memeval): rule (2) cannot be
  applied, and (3) uses Fisher's exact test on the pooled counts.

The memory pipeline's health (memeval.health) is gated on counts: a scenario whose memory
updates failed, or whose model calls errored, more often per repeat than in the baseline is
a regression. A baseline written before memeval kept these counts is not compared on them,
and the gate says so.

Other numbers (compactions, calls, tokens, latency) are shown, never gated. A row only in
the baseline is listed as missing, not failed, so a subset can be gated against a full
baseline. Before the deltas the gate lists what differs between the baseline's fingerprint
and the run's (memeval.provenance) and what that means for reading the verdicts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from memeval.baseline import (
    PASSING,
    Baseline,
    CheckHistory,
    CheckKey,
    RowKey,
    check_histories,
    load_baseline,
    row_key,
)
from memeval.errors import ConfigError
from memeval.health import RunHealth
from memeval.noise import (
    Stratum,
    fisher_one_sided,
    lower_tail,
    repeat_floor,
    repeat_lower_tail,
)
from memeval.provenance import Difference, differences
from memeval.rundir.fingerprint import Fingerprint
from memeval.rundir.results import Ratio, RunResults, ScenarioMetrics

__all__ = ["Baseline", "GateConfig", "GateReport", "check_gate", "compare", "fisher_one_sided"]

GATED = ("write_match", "memory_dependent", "memory_corruptible")
INFO = (
    "questions_not_attempted",  # fails where the answer declined or asked back (judge)
    "compactions",
    "dropped_writes",
    "blocked_ops",
    "model_calls_per_turn",
    "tokens_per_turn",
)
Status = Literal["ok", "regression", "improved", "missing", "new", "info"]
Test = Literal["strict", "check+repeat", "check", "pooled"]


@dataclass(frozen=True)
class GateConfig:
    alpha: float = 0.05  # significance for the noise test (used when either side repeats)
    max_drop: float = 0.0  # a pass-rate drop up to this (0..1) is tolerated


def gate_config(alpha: float = 0.05, max_drop: float = 0.0) -> GateConfig:
    """A validated GateConfig; bad thresholds are a one-line ConfigError."""
    if not 0 < alpha < 1:
        raise ConfigError(f"--alpha {alpha} must be between 0 and 1 (e.g. 0.05)")
    if not 0 <= max_drop < 1:
        raise ConfigError(f"--max-drop {max_drop} must be a rate in [0, 1) (e.g. 0.1 for 10%)")
    return GateConfig(alpha=alpha, max_drop=max_drop)


@dataclass(frozen=True)
class CheckPair:
    """One check's history in the baseline and in the run."""

    base: CheckHistory
    run: CheckHistory

    @property
    def broken(self) -> bool:
        """Passed in every baseline repeat, failed in at least one of the run's."""
        b = self.base
        return b.graded > 0 and b.passed == b.graded and self.run.passed < self.run.graded

    @property
    def fixed(self) -> bool:
        """Failed in every baseline repeat, passed in every one of the run's."""
        b, r = self.base, self.run
        return b.graded > 0 and b.passed == 0 and r.graded > 0 and r.passed == r.graded

    def stratum(self) -> Stratum:
        return Stratum(self.base.passed, self.base.graded, self.run.passed, self.run.graded)


@dataclass
class Delta:
    scenario: str  # the row's label: "book-summary", or "book-summary · retrieval"
    metric: str
    baseline: str
    current: str
    change: str
    status: Status
    p_value: float | None = None
    note: str = ""
    test: Test | None = None
    p_check: float | None = None  # the check-level test's p (independent checks assumed)
    p_repeat: float | None = None  # the repeat-level test's p (exact under any dependence)
    broken: list[str] = field(default_factory=list)  # stable in the baseline, failing now
    fixed: list[str] = field(default_factory=list)  # failing in the baseline, passing now


@dataclass(frozen=True)
class FlakyCheck:
    row: str
    metric: str
    check: str  # "s2q1 question"
    baseline: str  # "3/5 pass"
    current: str


@dataclass
class GateReport:
    baseline: str  # what was compared against
    run_id: str
    config: GateConfig
    deltas: list[Delta] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)
    flaky: list[FlakyCheck] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    pairs: dict[CheckKey, CheckPair] = field(default_factory=dict)  # checks on both sides

    @property
    def regressions(self) -> list[Delta]:
        return [d for d in self.deltas if d.status == "regression"]

    @property
    def exit_code(self) -> int:
        return 1 if self.regressions else 0


def compare(
    results: RunResults,
    baseline: Baseline,
    config: GateConfig = GateConfig(),
    *,
    fingerprint: Fingerprint | None = None,
    baseline_label: str = "",
    health: RunHealth | None = None,
) -> GateReport:
    """Judge every gated metric of every row of `results` against `baseline`; with the run's
    pipeline `health`, also its failed memory updates and model-call errors."""
    report = compare_checks(
        results.metrics,
        check_histories(results),
        baseline,
        config,
        run_id=results.run_id,
        fingerprint=fingerprint,
        baseline_label=baseline_label,
    )
    if health is not None:
        run_repeats = max((m.repeats for m in results.metrics), default=1)
        health_deltas(report, baseline, health, run_repeats)
    return report


HEALTH_GATED = ("failed_updates", "model_call_errors")
NO_HEALTH = (
    "the baseline has no pipeline health counts (a file written by an older memeval, or a "
    "verdicts.json): failed memory updates and model-call errors are not compared; refresh "
    "it with `memeval gate RUN_DIR --write-baseline FILE`"
)


def health_deltas(
    report: GateReport, baseline: Baseline, health: RunHealth, run_repeats: int
) -> None:
    """Add a delta per scenario for failed memory updates and model-call errors (when either
    side has any): more per repeat than the baseline had is a regression. An older baseline
    adds a note instead."""
    if baseline.health is None:
        report.notes.append(NO_HEALTH)
        return
    base_counts = {h.scenario: h for h in baseline.health}
    base_repeats = max(baseline.repeats, 1)
    for cur in health.scenarios.values():
        base = base_counts.get(cur.scenario)
        if base is None:
            continue  # a scenario the baseline does not have is listed as new already
        pairs = {
            "failed_updates": (base.failed_updates, base.updates, cur.failed, cur.updates),
            "model_call_errors": (base.call_errors, base.calls, cur.call_errors, cur.calls),
        }
        for metric in HEALTH_GATED:
            b, b_of, c, c_of = pairs[metric]
            if b == 0 and c == 0:
                continue  # none on either side: nothing to show (as for the pass rates)
            delta = Delta(cur.scenario, metric, f"{b}/{b_of}", f"{c}/{c_of}", f"{c - b:+d}", "ok")
            if c * base_repeats > b * run_repeats:
                delta.status = "regression"
                delta.note = "more than the baseline had (per repeat)"
            elif c * base_repeats < b * run_repeats:
                delta.status = "improved"
            report.deltas.append(delta)


def compare_checks(
    metrics: list[ScenarioMetrics],
    checks: list[CheckHistory],
    baseline: Baseline,
    config: GateConfig = GateConfig(),
    *,
    run_id: str = "",
    fingerprint: Fingerprint | None = None,
    baseline_label: str = "",
) -> GateReport:
    """The gate on a run's metric rows and check histories (what `compare` reads from a
    graded run; memeval.resample builds them from stored outcomes)."""
    report = GateReport(baseline=baseline_label, run_id=run_id, config=config)
    report.differences = differences(baseline.fingerprint, fingerprint)
    if not baseline.checks:
        report.notes.append(
            "the baseline has no per-check history (written by an older memeval): flaky "
            "checks cannot be told apart and repeated runs are judged on pooled counts; "
            "refresh it with `memeval gate RUN_DIR --write-baseline FILE`"
        )
    base_rows = {row_key(m): m for m in baseline.metrics}
    run_checks = _by_row_metric(checks)
    for cur in metrics:
        key = row_key(cur)
        base = base_rows.pop(key, None)
        if base is None:
            report.deltas.append(Delta(cur.label, "scenario", "–", "present", "–", "new"))
            continue
        for metric in GATED:
            base_ratio, cur_ratio = getattr(base, metric), getattr(cur, metric)
            if base_ratio.total == 0 and cur_ratio.total == 0:
                continue  # the row has none of these on either side
            history = baseline.checks_for(key, metric)
            pairs = _pairs(history, run_checks.get((key, metric), {})) if history else None
            repeats = (base.repeats, cur.repeats)
            delta = judge(cur.label, metric, base_ratio, cur_ratio, pairs, repeats, config)
            report.deltas.append(delta)
            report.pairs.update((p.run.key, p) for p in pairs or [])
            report.flaky += [
                FlakyCheck(cur.label, metric, p.base.label, p.base.history(), p.run.history())
                for p in pairs or []
                if p.base.flaky
            ]
        for metric in INFO:
            b, c = float(getattr(base, metric)), float(getattr(cur, metric))
            report.deltas.append(
                Delta(cur.label, metric, _num(b), _num(c), f"{c - b:+,.1f}", "info")
            )
    for base in base_rows.values():
        note = "in the baseline, not in this run"
        report.deltas.append(
            Delta(base.label, "scenario", "present", "–", "–", "missing", note=note)
        )
    return report


def judge(
    row: str,
    metric: str,
    base: Ratio,
    cur: Ratio,
    pairs: list[CheckPair] | None,
    repeats: tuple[int, int],
    config: GateConfig,
) -> Delta:
    """One gated pass rate, by the rules in the module docstring."""
    delta = Delta(row, metric, str(base), str(cur), "", "ok")
    base_repeats, run_repeats = repeats
    repeated = max(repeats) > 1
    if base.rate is None or cur.rate is None:
        delta.status = "new" if base.rate is None and cur.rate is not None else "missing"
        delta.change = "–"
        return delta
    drop = base.rate - cur.rate
    delta.change = f"{-drop:+.1%}" if abs(drop) > 1e-12 else "0"
    if base.total * run_repeats != cur.total * base_repeats:
        delta.note = "the checks differ: rates compared"
    delta.broken = [_change(p) for p in pairs or [] if p.broken]
    delta.fixed = [_change(p) for p in pairs or [] if p.fixed]
    dropped = drop > config.max_drop + 1e-12
    if not repeated:
        delta.test = "strict"
        regressed = dropped
    elif pairs is not None:
        delta.p_check = lower_tail(p.stratum() for p in pairs)
        delta.p_value = delta.p_check
        if repeat_floor(base_repeats, run_repeats) < config.alpha:
            delta.test = "check+repeat"
            delta.p_repeat = repeat_lower_tail(*repeat_scores(pairs))
            delta.p_value = max(delta.p_check, delta.p_repeat)
        else:
            delta.test = "check"
            delta.note = _join(
                delta.note, f"too few repeats for the repeat-level test ({_floor(repeats)})"
            )
        significant = dropped and delta.p_value < config.alpha
        regressed = significant and bool(delta.broken)
        if significant and not delta.broken:
            delta.note = _join(delta.note, "only flaky checks failed")
        elif drop > 1e-12 and not regressed:
            delta.note = _join(delta.note, "within noise")
    else:
        delta.test = "pooled"
        delta.p_value = fisher_one_sided(base.passed, base.total, cur.passed, cur.total)
        regressed = dropped and delta.p_value < config.alpha
        if drop > 1e-12 and not regressed:
            delta.note = _join(delta.note, "within noise")
    if regressed:
        delta.status = "regression"
    elif drop < -1e-12:
        delta.status = "improved"
    return delta


def repeat_scores(pairs: list[CheckPair]) -> tuple[list[int], list[int]]:
    """Passes per repeat over the checks both sides have: (the baseline's, the run's)."""

    def per_repeat(histories: list[CheckHistory]) -> list[int]:
        repeats = min((len(h.outcomes) for h in histories), default=0)
        return [sum(h.outcomes[r] in PASSING for h in histories) for r in range(repeats)]

    return per_repeat([p.base for p in pairs]), per_repeat([p.run for p in pairs])


def _change(pair: CheckPair) -> str:
    return f"{pair.base.label} {pair.base.history()} → {pair.run.history()}"


def _floor(repeats: tuple[int, int]) -> str:
    base, run = repeats
    return f"{base} + {run} repeats: smallest p {repeat_floor(base, run):.2f}"


def check_gate(
    results: RunResults,
    baseline: Path,
    config: GateConfig = GateConfig(),
    *,
    fingerprint: Fingerprint | None = None,
    health: RunHealth | None = None,
) -> GateReport:
    """Compare a graded run with a baseline; `memeval gate` and `memeval run --baseline`."""
    label, base = load_baseline(baseline)
    return compare(
        results, base, config, fingerprint=fingerprint, baseline_label=label, health=health
    )


def _by_row_metric(
    checks: list[CheckHistory],
) -> dict[tuple[RowKey, str], dict[CheckKey, CheckHistory]]:
    found: dict[tuple[RowKey, str], dict[CheckKey, CheckHistory]] = {}
    for c in checks:
        found.setdefault((c.row, c.metric), {})[c.key] = c
    return found


def _pairs(
    base: dict[CheckKey, CheckHistory], run: dict[CheckKey, CheckHistory]
) -> list[CheckPair]:
    """Checks graded on both sides (a check only one side has is in the rates, not the test)."""
    return [
        CheckPair(b, run[key])
        for key, b in base.items()
        if key in run and b.graded > 0 and run[key].graded > 0
    ]


def _num(value: float) -> str:
    return f"{value:,.0f}" if value.is_integer() else f"{value:,.1f}"


def _join(a: str, b: str) -> str:
    return f"{a}; {b}" if a else b
