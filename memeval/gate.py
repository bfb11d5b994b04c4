"""The regression gate: compare a graded run's metrics with a baseline and fail on drops.

Gated metrics are pass rates: write-match, memory-dependent and memory-corruptible
questions. With one repeat on both sides outcomes are deterministic re-runs, so any drop
beyond `max_drop` (default 0: one fewer passing question) is a regression. With repeats,
single flips are expected noise; a drop is flagged only when it exceeds `max_drop` AND a
one-sided Fisher exact test on the pooled pass/fail counts gives p < `alpha` (default 0.05).
Fisher's test is exact for the small counts and near-100% pass rates a suite produces,
where normal-approximation tests and Wilson intervals are unreliable; one-sided because
only getting worse fails a build. Other numbers (compactions, calls, tokens, latency) are
shown as information, never gated. A scenario only in the baseline is listed as missing,
not failed, so a run of a subset can still be gated against a full baseline.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError
from rich.table import Table

from memeval.errors import ConfigError
from memeval.rundir.results import (
    Ratio,
    RunResults,
    ScenarioMetrics,
    load_results,
)

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


class Baseline(BaseModel):
    """A small committed file of metrics (`memeval gate RUN --write-baseline FILE`)."""

    schema_version: int = 1
    kind: Literal["memeval-baseline"] = "memeval-baseline"
    run_id: str
    created_at: str = ""
    metrics: list[ScenarioMetrics] = Field(default_factory=list)


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


@dataclass
class Delta:
    scenario: str
    metric: str
    baseline: str
    current: str
    change: str
    status: Status
    p_value: float | None = None
    note: str = ""


@dataclass
class GateReport:
    baseline: str  # what was compared against
    run_id: str
    config: GateConfig
    deltas: list[Delta] = field(default_factory=list)

    @property
    def regressions(self) -> list[Delta]:
        return [d for d in self.deltas if d.status == "regression"]

    @property
    def exit_code(self) -> int:
        return 1 if self.regressions else 0


def fisher_one_sided(base_pass: int, base_total: int, cur_pass: int, cur_total: int) -> float:
    """P(the current run passes `cur_pass` or fewer | both runs share one pass rate)."""
    passes, total = base_pass + cur_pass, base_total + cur_total
    denominator = math.comb(total, cur_total)
    low = max(0, cur_total - (total - passes))
    tail = sum(
        math.comb(passes, k) * math.comb(total - passes, cur_total - k)
        for k in range(low, cur_pass + 1)
    )
    return min(1.0, tail / denominator)


def compare_ratio(
    scenario: str, metric: str, base: Ratio, cur: Ratio, repeated: bool, config: GateConfig
) -> Delta:
    """One gated pass rate, judged by the rules in the module docstring."""
    delta = Delta(scenario, metric, str(base), str(cur), "", "ok")
    if base.rate is None or cur.rate is None:
        delta.status = "new" if base.rate is None and cur.rate is not None else "missing"
        delta.change = "–"
        return delta
    drop = base.rate - cur.rate
    delta.change = f"{-drop:+.1%}" if abs(drop) > 1e-12 else "0"
    if base.total != cur.total:
        delta.note = "totals differ: rates compared"
    if repeated:
        delta.p_value = fisher_one_sided(base.passed, base.total, cur.passed, cur.total)
        regressed = drop > config.max_drop + 1e-12 and delta.p_value < config.alpha
        if drop > 1e-12 and not regressed:
            delta.note = _join(delta.note, "within noise")
    else:
        regressed = drop > config.max_drop + 1e-12
    if regressed:
        delta.status = "regression"
    elif drop < -1e-12:
        delta.status = "improved"
    return delta


def compare(
    current: list[ScenarioMetrics],
    baseline: list[ScenarioMetrics],
    config: GateConfig = GateConfig(),
    *,
    run_id: str = "",
    baseline_label: str = "",
) -> GateReport:
    report = GateReport(baseline=baseline_label, run_id=run_id, config=config)
    base_by_name = {m.scenario: m for m in baseline}
    for cur in current:
        base = base_by_name.pop(cur.scenario, None)
        if base is None:
            report.deltas.append(Delta(cur.scenario, "scenario", "–", "present", "–", "new"))
            continue
        repeated = max(base.repeats, cur.repeats) > 1
        for metric in GATED:
            base_ratio, cur_ratio = getattr(base, metric), getattr(cur, metric)
            if base_ratio.total == 0 and cur_ratio.total == 0:
                continue  # the scenario has none of these on either side
            report.deltas.append(
                compare_ratio(cur.scenario, metric, base_ratio, cur_ratio, repeated, config)
            )
        for metric in INFO:
            b, c = float(getattr(base, metric)), float(getattr(cur, metric))
            report.deltas.append(
                Delta(cur.scenario, metric, _num(b), _num(c), f"{c - b:+,.1f}", "info")
            )
    for name in base_by_name:
        note = "in the baseline, not in this run"
        report.deltas.append(Delta(name, "scenario", "present", "–", "–", "missing", note=note))
    return report


def load_baseline(spec: Path) -> tuple[str, list[ScenarioMetrics]]:
    """A graded run directory or a baseline JSON -> (label, metrics)."""
    spec = Path(spec)
    if spec.is_dir():
        return str(spec), load_results(spec).metrics
    if not spec.is_file():
        raise ConfigError(f"--baseline {spec}: no such run directory or baseline JSON")
    try:
        data = json.loads(spec.read_text(encoding="utf-8"))
        if isinstance(data, dict) and "turns" in data and "kind" not in data:
            return str(spec), RunResults.model_validate(data).metrics  # a verdicts.json
        baseline = Baseline.model_validate(data)
    except (ValueError, ValidationError) as exc:
        first = str(exc).splitlines()[0]
        raise ConfigError(
            f"--baseline {spec}: not a baseline JSON ({first}); make one with "
            "`memeval gate RUN_DIR --write-baseline FILE`"
        ) from None
    return f"{spec} (run {baseline.run_id})", baseline.metrics


def write_baseline(results: RunResults, path: Path) -> Path:
    """Save a graded run's per-scenario metrics as a small JSON to commit next to the prompts."""
    stamp = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    baseline = Baseline(run_id=results.run_id, created_at=stamp, metrics=results.metrics)
    Path(path).write_text(baseline.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return Path(path)


def check_gate(
    results: RunResults, baseline: Path, config: GateConfig = GateConfig()
) -> GateReport:
    """Compare a graded run with a baseline; `memeval gate` and `memeval run --baseline`."""
    label, base = load_baseline(baseline)
    return compare(results.metrics, base, config, run_id=results.run_id, baseline_label=label)


def gate_table(report: GateReport) -> Table:
    table = Table(title=f"gate: run {report.run_id} vs {report.baseline}")
    for column in ("scenario", "metric", "baseline", "current", "change", "p", "status"):
        table.add_column(column)
    style = {"regression": "bold red", "improved": "green", "missing": "yellow", "new": "cyan"}
    for d in report.deltas:
        p = f"{d.p_value:.3f}" if d.p_value is not None else ""
        status = d.status + (f" ({d.note})" if d.note else "")
        table.add_row(
            d.scenario,
            d.metric,
            d.baseline,
            d.current,
            d.change,
            p,
            status,
            style=style.get(d.status, "dim" if d.status == "info" else ""),
        )
    return table


def _num(value: float) -> str:
    return f"{value:,.0f}" if value.is_integer() else f"{value:,.1f}"


def _join(a: str, b: str) -> str:
    return f"{a}; {b}" if a else b
