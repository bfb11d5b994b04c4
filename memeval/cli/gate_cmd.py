"""`memeval gate` (not implemented yet)."""

from __future__ import annotations

import typer

from memeval.cli.app import app, handle_errors


@app.command("gate", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
@handle_errors
def gate_command(ctx: typer.Context) -> None:
    """Not implemented yet."""
    typer.echo("memeval gate: not yet implemented", err=True)
    raise typer.Exit(3)
