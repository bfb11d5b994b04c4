"""After the turns are played: grade, publish (verdicts, tables, report.html, grades to
Phoenix), write JUnit XML and compare with a baseline. Reads only the saved run."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from memeval.gate import GateConfig, GateReport, check_gate
from memeval.gate_view import print_gate
from memeval.grading.judge import DEFAULT_TIMEOUT_S, judge_deadline
from memeval.grading.run import grade_run
from memeval.health import RunHealth, run_health
from memeval.junit import write_junit
from memeval.models.base import CallRecord
from memeval.models.pool import ModelPool, cache_path
from memeval.models.spec import parse_spec
from memeval.progress import RunProgress
from memeval.publishing import publish
from memeval.rundir.merge import merge_shards
from memeval.rundir.record import TurnRecord
from memeval.rundir.results import RunResults
from memeval.rundir.saved import SavedRun
from memeval.summary import judge_trust_line, summary_line, summary_table
from memeval.tracing.spans import setup_tracing

EXIT_UNHEALTHY = 4  # memeval.cli.app's exit code for a run whose pipeline mostly failed


@dataclass
class Finished:
    results: RunResults
    report: Path
    gate: GateReport | None = None
    junit: Path | None = None
    health: RunHealth | None = None

    @property
    def exit_code(self) -> int:
        """4 when the memory pipeline mostly failed (before the gate's 1: a broken pipeline
        explains any regression), else the gate's code, else 0."""
        if self.health is not None and self.health.unhealthy:
            return EXIT_UNHEALTHY
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
    judge_strategy: str | None = None,
) -> Finished:
    run = SavedRun.open(run_dir)
    info = run.info
    phoenix = info.phoenix
    # Judge calls join each question's own trace in the Phoenix the run was traced to.
    tracing = setup_tracing(
        phoenix.url if phoenix else None, (phoenix.project if phoenix else "") or "memeval"
    )
    judge_model = None
    pool = None
    timeout_s: float | None = DEFAULT_TIMEOUT_S
    if judge and "judge" in info.models:
        specs = {"judge": parse_spec(info.models["judge"])}
        pool = ModelPool(specs, cache_path() if info.config.cache else None)
        sink: list[CallRecord] = []
        judge_model = pool.for_unit(["judge"], 0, sink, tracing)["judge"]
        timeout_s = judge_deadline(specs["judge"])
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
                run,
                judge_model,
                judge_writes=judge_writes,
                judge_scope=lambda record: tracing.under(record.trace_id, record.span_id),
                on_judged=judged,
                strategy=judge_strategy,
                timeout_s=timeout_s,
            )
    finally:
        if pool is not None:
            pool.close()
        tracing.shutdown()
    health = run_health(run)
    done = Finished(results=results, report=publish(run, results).report, health=health)
    if baseline is not None:
        config = gate or GateConfig()
        done.gate = check_gate(
            results, baseline, config, fingerprint=info.fingerprint, health=health
        )
    if junit is not None:
        done.junit = write_junit(results, junit, done.gate)
    return done


async def merge_runs(
    shard_dirs: list[Path],
    out: Path,
    *,
    junit: Path | None = None,
    baseline: Path | None = None,
    gate: GateConfig | None = None,
    argv: list[str] | None = None,
) -> Finished:
    """Join shard run directories into `out` and finish it like a run: graded with the
    shards' own judgements (no model is called), tables, report, JUnit and gate."""
    merged = merge_shards(shard_dirs, out, argv or [])
    return await finish_run(merged, judge=False, junit=junit, baseline=baseline, gate=gate)


def print_summary(done: Finished, console: Console | None = None) -> None:
    console = console or Console()
    if console.width >= 120:  # the table needs room; the lines below say the same in brief
        console.print(summary_table(done.results))
    for metrics in done.results.metrics:
        health = done.health.of(metrics.scenario) if done.health is not None else None
        console.print(
            f"[bold]{escape(metrics.scenario)}[/]: {escape(summary_line(metrics, health))}"
        )
    trust = judge_trust_line(done.results)
    if trust:
        console.print(trust, markup=False)
    if done.gate is not None:
        print_gate(done.gate, console)


def warning_lines(done: Finished) -> list[str]:
    """The block `memeval run` prints on stderr when the pipeline mostly failed."""
    return done.health.warning_lines() if done.health is not None else []
