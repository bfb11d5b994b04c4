"""`memeval grade` (not implemented yet)."""

from __future__ import annotations

import typer

from memeval.cli.app import app, handle_errors


@app.command("grade", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
@handle_errors
def grade_command(ctx: typer.Context) -> None:
    """Not implemented yet."""
    typer.echo("memeval grade: not yet implemented", err=True)
    raise typer.Exit(3)
