"""`memeval gate RUN_DIR --baseline B`: compare with a baseline, exit 1 on a regression."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memeval.cli.app import EXIT_REGRESSION, app, handle_errors
from memeval.errors import ConfigError


@app.command("gate")
@handle_errors
def gate_command(
    run_dir: Annotated[Path, typer.Argument(help="A graded run directory (reports/<run-id>).")],
    baseline: Annotated[
        Path | None,
        typer.Option(help="A graded run directory, or a baseline JSON from --write-baseline."),
    ] = None,
    alpha: Annotated[
        float, typer.Option(help="With repeats: flag a drop only when Fisher's p < alpha.")
    ] = 0.05,
    max_drop: Annotated[
        float, typer.Option(help="Tolerated pass-rate drop, 0..1 (0: any drop counts).")
    ] = 0.0,
    junit: Annotated[
        Path | None, typer.Option(help="Write JUnit XML: one case per question and write.")
    ] = None,
    write_baseline_to: Annotated[
        Path | None,
        typer.Option("--write-baseline", metavar="FILE", help="Save this run's metrics as JSON."),
    ] = None,
) -> None:
    """Print what differs from the baseline's run and the metric deltas; exit 1 when a pass
    rate dropped beyond what the baseline's spread explains, or when memory updates failed or
    model calls errored more often than in the baseline."""
    from memeval.baseline import baseline_warnings, write_baseline
    from memeval.gate import check_gate, gate_config
    from memeval.gate_view import print_gate
    from memeval.health import run_health
    from memeval.junit import write_junit
    from memeval.rundir.saved import SavedRun

    config = gate_config(alpha, max_drop)
    if baseline is None and junit is None and write_baseline_to is None:
        raise ConfigError(
            "give --baseline B (a run directory or baseline JSON), --junit or --write-baseline FILE"
        )
    run = SavedRun.open(run_dir)
    results = run.graded()
    report = None
    if baseline is not None:
        report = check_gate(
            results, baseline, config, fingerprint=run.info.fingerprint, health=run_health(run)
        )
    if junit is not None:
        typer.echo(f"junit: {write_junit(results, junit, report)}")
    if write_baseline_to is not None:
        typer.echo(f"baseline: {write_baseline(run, write_baseline_to)}")
        for warning in baseline_warnings(run):
            typer.echo(f"note: {warning}", err=True)
    if report is None:
        return
    print_gate(report)
    if report.regressions:
        names = ", ".join(f"{d.scenario} {d.metric}" for d in report.regressions)
        typer.echo(f"regression: {names}", err=True)
        raise typer.Exit(EXIT_REGRESSION)
    typer.echo("no regression")
