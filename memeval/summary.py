"""The run's per-scenario summary for the console: one line per scenario, or a rich table."""

from __future__ import annotations

from rich.table import Table

from memeval.health import ScenarioHealth
from memeval.rundir.results import Latency, RunResults, ScenarioMetrics


def summary_line(m: ScenarioMetrics, health: ScenarioHealth | None = None) -> str:
    """write-match 44/48 · memory-dependent 16/18 · ... · pipeline p50/p95 1.2/3.4 s (...).

    With the scenario's pipeline `health`, what went wrong in the pipeline comes first
    ("memory updates failed 7/7 · updater call errors 14/14 · write-match ..."); a healthy
    pipeline adds nothing."""
    parts = [
        f"write-match {m.write_match}",
        f"memory-dependent {m.memory_dependent}",
        f"memory-corruptible {m.memory_corruptible}",
        f"compactions {m.compactions} (reached target {m.compactions_reached_target})",
        f"dropped writes {m.dropped_writes}",
        f"model calls/turn {m.model_calls_per_turn:.1f}",
        f"tokens/turn {m.tokens_per_turn:,.0f}",
        f"pipeline p50/p95 {_latency(m.pipeline_latency)}"
        f" (with compaction {_latency(m.pipeline_latency_compaction)})",
    ]
    if m.questions_error:
        parts.insert(3, f"question errors {m.questions_error}")
    if m.questions_not_attempted:
        parts.insert(3, f"not attempted {m.questions_not_attempted}")
    if m.questions_ungraded:
        parts.insert(3, f"ungraded questions {m.questions_ungraded}")
    if m.judge_human_agreement is not None:
        parts.append(f"judge-human agreement {m.judge_human_agreement}")
    if is_async(m):
        parts.append(f"stale reads {m.stale_reads}/{m.memory_reads}")
        parts.append(f"update lag p50/p95 {_latency(m.update_lag)}")
    if health is not None:
        parts[:0] = health.figures()
    return " · ".join(parts)


def judge_trust_line(results: RunResults) -> str:
    """The judge's accuracy on the controls of the questions it graded, low-trust when under
    90%; empty when no judge graded anything with controls."""
    jc = results.judge_calibration
    if jc is None or not jc.controls:
        return ""
    accuracy = f" ({jc.accuracy:.0%})" if jc.accuracy is not None else ""
    line = (
        f"judge {jc.model} ({jc.strategy}): {jc.correct}/{jc.graded}{accuracy} right on the "
        f"controls of the {jc.questions} questions it graded"
    )
    if jc.could_not_grade:
        line += f", {jc.could_not_grade} not graded"
    return line + (" - low-trust judge verdicts (under 90%)" if jc.low_trust else "")


def is_async(m: ScenarioMetrics) -> bool:
    """Updates ran in the background (--async-memory): their lag after the answer was timed."""
    return m.update_lag.n > 0


def summary_table(results: RunResults) -> Table:
    """The per-scenario summary as a rich table for the terminal."""
    table = Table(title=f"run {results.run_id}")
    table.add_column("scenario", no_wrap=True)
    columns = ["repeats", "write", "mem-dep", "mem-corr", "compact (target)", "dropped"]
    columns += ["calls/turn", "tokens/turn", "p50/p95", "p50/p95 compact"]
    shown_async = any(is_async(m) for m in results.metrics)
    if shown_async:
        columns += ["stale reads", "lag p50/p95"]
    for column in columns:
        table.add_column(column, justify="right")
    for m in results.metrics:
        extra = [f"{m.stale_reads}/{m.memory_reads}", _latency(m.update_lag)] if shown_async else []
        table.add_row(
            m.scenario,
            str(m.repeats),
            str(m.write_match),
            str(m.memory_dependent),
            str(m.memory_corruptible),
            f"{m.compactions} ({m.compactions_reached_target})",
            str(m.dropped_writes),
            f"{m.model_calls_per_turn:.1f}",
            f"{m.tokens_per_turn:,.0f}",
            _latency(m.pipeline_latency),
            _latency(m.pipeline_latency_compaction),
            *extra,
        )
    return table


def _latency(lat: Latency) -> str:
    if lat.p50_s is None or lat.p95_s is None:
        return "–"
    return f"{lat.p50_s:.1f}/{lat.p95_s:.1f} s"
