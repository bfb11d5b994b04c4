"""Per-scenario numbers from the turn records and their verdicts, pooled over repeats."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

import pandas as pd

from memeval.rundir.record import TurnRecord
from memeval.rundir.results import Latency, Ratio, ScenarioMetrics, TurnVerdicts
from memeval.rundir.staleness import Freshness, TurnKey


def scenario_metrics(
    scenario: str,
    records: Sequence[TurnRecord],
    verdicts: Sequence[TurnVerdicts],
    agreement: Ratio | None = None,
    freshness: Mapping[TurnKey, Freshness] | None = None,
) -> ScenarioMetrics:
    m = ScenarioMetrics(
        scenario=scenario,
        repeats=len({r.repeat for r in records}) or 1,
        turns=len(records),
        judge_human_agreement=agreement,
    )
    for v in verdicts:
        if v.write is not None:
            _count(m.write_match, v.write.verdict)
        if v.question is not None:
            ratio = m.memory_corruptible if v.question_type == "memory-corruptible" else None
            _count(ratio or m.memory_dependent, v.question.verdict)
            m.questions_error += v.question.verdict == "error"
            m.questions_ungraded += v.question.verdict == "na"
            m.questions_not_attempted += v.question.not_attempted
    plain: list[float] = []
    compacted: list[float] = []
    lags: list[float] = []
    calls = tokens = 0
    for r in records:
        fresh = (freshness or {}).get((r.scenario, r.repeat, r.turn))
        if fresh is not None and fresh.read:
            m.memory_reads += 1
            m.stale_reads += fresh.stale
        if "lag_s" in r.timings:
            lags.append(r.timings["lag_s"])
        status, compaction = r.update.status, r.update.compaction
        m.dropped_writes += status == "dropped-over-cap"
        m.rejected_updates += status == "rejected-after-retries"
        m.failed_updates += status in ("failed", "skipped-safety-unavailable")
        m.blocked_ops += len(r.update.blocked)
        if compaction:
            m.compactions += 1
            m.compactions_reached_target += compaction.reached_target
        latency = r.pipeline_seconds()
        if latency is not None:
            (compacted if compaction else plain).append(latency)
        turn_calls = r.model_calls()
        calls += len(turn_calls)
        tokens += sum(c.tokens for c in turn_calls)
    if records:
        m.model_calls_per_turn = calls / len(records)
        m.tokens_per_turn = tokens / len(records)
    m.pipeline_latency = _latency(plain)
    m.pipeline_latency_compaction = _latency(compacted)
    m.update_lag = _latency(lags)
    m.wall_s = _wall_seconds(records)
    return m


def _count(ratio: Ratio, verdict: str) -> None:
    if verdict == "na":
        return
    ratio.total += 1
    ratio.passed += verdict == "pass"


def _latency(values: list[float]) -> Latency:
    if not values:
        return Latency()
    series = pd.Series(values, dtype="float64")
    return Latency(
        n=len(values), p50_s=float(series.quantile(0.5)), p95_s=float(series.quantile(0.95))
    )


def _wall_seconds(records: Sequence[TurnRecord]) -> float:
    """From the first turn's start to the last turn's end; the summed turn times otherwise."""
    try:
        starts = [_parse(r.started_at) for r in records if r.started_at]
        ends = [_parse(r.finished_at) for r in records if r.finished_at]
        if starts and ends:
            return max(0.0, (max(ends) - min(starts)).total_seconds())
    except ValueError:
        pass
    return float(sum(r.timings.get("turn_s", 0.0) for r in records))


def _parse(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))
