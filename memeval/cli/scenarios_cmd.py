"""`memeval scenarios list | validate | show` (not implemented yet)."""

from __future__ import annotations

import typer

from memeval.cli.app import handle_errors, scenarios_app


@scenarios_app.command("list")
@handle_errors
def list_command() -> None:
    """Not implemented yet."""
    typer.echo("memeval scenarios list: not yet implemented", err=True)
    raise typer.Exit(3)
