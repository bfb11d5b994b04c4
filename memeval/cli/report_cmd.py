"""`memeval report RUN_DIR`: regenerate a run's report.html from the saved run directory (for
a comparison directory, the comparison page and comparison.csv)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memeval.cli.app import app, handle_errors
from memeval.errors import ConfigError


@app.command("report")
@handle_errors
def report_command(
    run_dir: Annotated[Path, typer.Argument(help="A run directory, e.g. reports/<run-id>.")],
    out: Annotated[
        Path | None, typer.Option("--out", help="Write here instead of RUN_DIR/report.html.")
    ] = None,
) -> None:
    """Regenerate report.html (no model is called; judge results come from verdicts.json).
    An ungraded run shows its deterministic checks, computed now and not saved."""
    from memeval.grading.run import grade_without_model
    from memeval.publishing import publish
    from memeval.rundir.comparison import is_comparison
    from memeval.rundir.saved import SavedRun

    if is_comparison(run_dir):
        from memeval.comparison import publish_comparison

        if out is not None:
            raise ConfigError("--out is for one run's report; a comparison page stays in its run")
        typer.echo(str(publish_comparison(run_dir)[1]))
        return
    run = SavedRun.open(run_dir)
    results = run.results if run.results is not None else grade_without_model(run)
    typer.echo(str(publish(run, results, save=False, report_to=out).report))
