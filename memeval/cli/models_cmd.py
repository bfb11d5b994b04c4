"""`memeval models check SPEC...`: what each model can do and what memeval will use with it.

Exit 0 when every model answered; 2 with one line when an endpoint is unreachable, refuses
the key or the spec is invalid. Model text reaches the terminal only as rich `Text`.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from memeval.cli.app import app, handle_errors

models_app = typer.Typer(
    help="Check model endpoints and the embedded models.", no_args_is_help=True
)
app.add_typer(models_app, name="models")


@models_app.command("check")
@handle_errors
def check_command(
    specs: Annotated[
        list[str],
        typer.Argument(
            metavar="SPEC...",
            help="openai:MODEL (OPENAI_BASE_URL / OPENAI_API_KEY) | local:NAME | local",
        ),
    ],
) -> None:
    """Probe chat, each JSON mode, tool calls, usage and latency; print what memeval will use."""
    from memeval.models.check import check_model
    from memeval.models.spec import parse_spec

    parsed = [parse_spec(spec) for spec in specs]  # every spec valid before any call
    console = Console()
    for spec in parsed:
        report = asyncio.run(check_model(spec))
        table = Table(title=Text(report.spec), title_justify="left")
        table.add_column("feature")
        table.add_column("works")
        table.add_column("detail")
        for feature in report.features:
            mark = Text("yes", style="green") if feature.works else Text("no", style="red")
            table.add_row(Text(feature.name), mark, Text(feature.detail))
        console.print(table)
        if report.uses:
            uses = " · ".join(f"{k}: {v}" for k, v in report.uses.items())
            console.print(Text(f"memeval will use: {uses}"))
