"""After the turns are played: grade, write tables and report.html, send grades to Phoenix,
write JUnit XML and compare with a baseline. Reads only the saved run directory."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from memeval.gate import GateConfig, GateReport, check_gate, gate_table
from memeval.grading.run import grade_run
from memeval.junit import write_junit
from memeval.models.base import CallRecord
from memeval.models.pool import ModelPool
from memeval.progress import RunProgress
from memeval.report.render import render_report
from memeval.rundir.record import TurnRecord, read_run
from memeval.rundir.results import RunResults
from memeval.runner import cache_path
from memeval.tables import write_tables
from memeval.tracing.annotations import annotate_run
from memeval.tracing.spans import setup_tracing


@dataclass
class Finished:
    results: RunResults
    report: Path
    gate: GateReport | None = None
    junit: Path | None = None

    @property
    def exit_code(self) -> int:
        return self.gate.exit_code if self.gate is not None else 0


async def finish_run(
    run_dir: Path,
    *,
    judge: bool = True,
    judge_writes: bool = False,
    junit: Path | None = None,
    baseline: Path | None = None,
    gate: GateConfig | None = None,
    progress: bool = False,
) -> Finished:
    info = read_run(run_dir)
    phoenix = info.phoenix or {}
    # Judge calls join each question's own trace in the Phoenix the run was traced to.
    tracing = setup_tracing(phoenix.get("url"), str(phoenix.get("project") or "memeval"))
    judge_model = None
    pool = None
    if judge and "judge" in info.models:
        use_cache = bool(info.config.get("cache", True))
        pool = ModelPool(info.models, cache_path() if use_cache else None)
        sink: list[CallRecord] = []
        judge_model = pool.for_unit(["judge"], 0, sink, tracing)["judge"]
    bar = RunProgress(enabled=progress and judge_model is not None)
    label = f"judge {judge_model.name}" if judge_model is not None else "judge"
    started = time.monotonic()

    def judged(record: TurnRecord, done: int, total: int) -> None:
        if done == 1:
            bar.add_unit(label, total, 0, started)
        bar.turn_done(label, record.session, record.turn, calls=done)

    try:
        with bar:
            results = await grade_run(
                run_dir,
                judge_model,
                judge_writes=judge_writes,
                judge_scope=lambda record: tracing.under(record.trace_id, record.span_id),
                on_judged=judged,
            )
    finally:
        if pool is not None:
            pool.close()
        tracing.shutdown()
    write_tables(run_dir, results)
    report = render_report(run_dir)
    annotate_run(run_dir, results)
    done = Finished(results=results, report=report)
    if junit is not None:
        done.junit = write_junit(results, junit)
    if baseline is not None:
        done.gate = check_gate(run_dir, baseline, gate or GateConfig())
    return done


def print_summary(done: Finished, console: Console | None = None) -> None:
    from memeval.tables import summary_line, summary_table

    console = console or Console()
    if console.width >= 120:  # the table needs room; the lines below say the same in brief
        console.print(summary_table(done.results))
    for metrics in done.results.metrics:
        console.print(f"[bold]{metrics.scenario}[/]: {summary_line(metrics)}")
    if done.gate is not None:
        console.print(gate_table(done.gate))
