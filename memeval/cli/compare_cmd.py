"""`memeval compare RUN_A RUN_B`: what flipped between two graded runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memeval.cli.app import app, handle_errors


@app.command("compare")
@handle_errors
def compare_command(
    run_a: Annotated[Path, typer.Argument(help="The baseline run directory (before).")],
    run_b: Annotated[Path, typer.Argument(help="The run to compare with it (after).")],
    out: Annotated[
        Path | None, typer.Option("--out", help="Compare page path (default RUN_B/compare.html).")
    ] = None,
) -> None:
    """Print the verdicts that flipped and the metric deltas; write an HTML compare page."""
    from memeval.compare import compare_runs, print_comparison
    from memeval.report.compare_page import render_compare
    from memeval.rundir.saved import SavedRun

    comparison = compare_runs(SavedRun.open(run_a), SavedRun.open(run_b))
    print_comparison(comparison)
    typer.echo(f"\n{render_compare(comparison, out)}")
