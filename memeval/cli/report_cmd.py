"""`memeval report RUN_DIR`: regenerate a run's report.html from the saved run directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memeval.cli.app import app, handle_errors


@app.command("report")
@handle_errors
def report_command(
    run_dir: Annotated[Path, typer.Argument(help="A run directory, e.g. reports/<run-id>.")],
    out: Annotated[
        Path | None, typer.Option("--out", help="Write here instead of RUN_DIR/report.html.")
    ] = None,
) -> None:
    """Regenerate report.html (no model is called; judge results come from verdicts.json)."""
    from memeval.report.render import render_report

    typer.echo(str(render_report(run_dir, out)))
