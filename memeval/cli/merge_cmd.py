"""`memeval merge RUN_DIR... --out DIR`: join `memeval run --shard I/N` directories into one
graded run, as if it had run unsharded."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated

import typer

from memeval.cli.app import app, handle_errors


@app.command("merge")
@handle_errors
def merge_command(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(metavar="RUN_DIR...", help="The run directories of every shard."),
    ],
    out: Annotated[Path, typer.Option(help="The merged run directory to create.")],
    junit: Annotated[Path | None, typer.Option(help="Write JUnit XML here.")] = None,
    baseline: Annotated[
        Path | None, typer.Option(help="Run dir or metrics JSON; exit 1 on a regression.")
    ] = None,
    alpha: Annotated[float, typer.Option(help="Gate: significance of a pass-rate drop.")] = 0.05,
    max_drop: Annotated[float, typer.Option(help="Gate: tolerated pass-rate drop (0..1).")] = 0.0,
) -> None:
    """Check the shards are one configuration, each once, all complete; write the merged run
    (run.json, events, snapshots, verdicts with the shards' judgements, tables, report)."""
    from memeval.finish import merge_runs, print_summary, warning_lines
    from memeval.gate import gate_config

    gate = gate_config(alpha, max_drop)
    done = asyncio.run(
        merge_runs(
            list(run_dirs), out, junit=junit, baseline=baseline, gate=gate, argv=sys.argv[1:]
        )
    )
    print_summary(done)
    typer.echo(f"run directory: {out}")
    typer.echo(f"report: {done.report}")
    if done.junit is not None:
        typer.echo(f"junit: {done.junit}")
    if done.gate is not None and done.gate.regressions:
        names = ", ".join(f"{d.scenario} {d.metric}" for d in done.gate.regressions)
        typer.echo(f"regression: {names}", err=True)
    for line in warning_lines(done):
        typer.echo(line, err=True)
    if done.exit_code:
        raise typer.Exit(done.exit_code)
