"""`memeval report` (not implemented yet)."""

from __future__ import annotations

import typer

from memeval.cli.app import app, handle_errors


@app.command("report", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
@handle_errors
def report_command(ctx: typer.Context) -> None:
    """Not implemented yet."""
    typer.echo("memeval report: not yet implemented", err=True)
    raise typer.Exit(3)
