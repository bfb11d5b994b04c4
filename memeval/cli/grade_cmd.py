"""`memeval grade RUN_DIR GRADES.json`: import human grades, re-grade, rewrite tables and report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memeval.cli.app import app, handle_errors


@app.command("grade")
@handle_errors
def grade_command(
    run_dir: Annotated[Path, typer.Argument(help="The run directory (reports/<run-id>).")],
    grades: Annotated[
        Path | None,
        typer.Argument(help="A grades.json exported from the report (omit to re-grade)."),
    ] = None,
) -> None:
    """Merge human grades into a run (a human grade overrides check and judge), then rewrite
    verdicts.json, the tables and report.html. No model is called; stored judge results stay."""
    from rich.console import Console

    from memeval.grading.regrade import import_grades
    from memeval.publishing import publish
    from memeval.rundir.saved import SavedRun
    from memeval.summary import summary_table

    run = SavedRun.open(run_dir)
    done = import_grades(run, grades)
    published = publish(run, done.results)  # Phoenix too, when the run was traced to one
    console = Console()
    console.print(summary_table(done.results))
    for m in done.results.metrics:
        if m.judge_human_agreement is not None:
            console.print(f"{m.scenario}: judge-human agreement {m.judge_human_agreement}")
    if grades is not None:
        typer.echo(f"imported {done.imported} grades ({done.total} in the run)")
    else:
        typer.echo(f"re-graded ({done.total} human grades applied)")
    typer.echo(f"report: {published.report}")
