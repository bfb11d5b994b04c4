"""`memeval phoenix`: a local Phoenix for this user, until Ctrl-C."""

from __future__ import annotations

import signal
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer

from memeval.cli.app import EXIT_INTERNAL, app, fail, handle_errors
from memeval.tracing.phoenix import DEFAULT_DIR, DEFAULT_PORT, PhoenixServer


@app.command("phoenix")
@handle_errors
def phoenix_command(
    port: Annotated[int, typer.Option(help="Port for the UI and OTLP/HTTP, on 127.0.0.1.")] = (
        DEFAULT_PORT
    ),
    data_dir: Annotated[
        Path, typer.Option("--dir", help="Where Phoenix keeps its database and files.")
    ] = DEFAULT_DIR,
) -> None:
    """Start Arize Phoenix on 127.0.0.1 (telemetry, external resources, assistant and MCP off)."""
    server = PhoenixServer(port, data_dir)
    # A `kill` must not orphan Phoenix (it runs in its own session): treat it like Ctrl-C.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    # Ctrl-C stops it even when started from a shell that ignores SIGINT for background jobs
    # (a child inherits the ignore, and Python then never raises KeyboardInterrupt).
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    typer.echo(f"Starting Phoenix (about 15 s); log: {server.log_path}", err=True)
    try:
        server.start()
        typer.echo(f"Phoenix is up: {server.url}")
        typer.echo(f"Trace a run there: memeval run SCENARIO --phoenix {server.url}")
        typer.echo(
            f"Data: {server.data_dir}. Phoenix also listens for OTLP/gRPC on port "
            f"{server.grpc_port} (all interfaces; memeval itself sends over HTTP). "
            "Press Ctrl-C to stop."
        )
        code = server.wait()
    except KeyboardInterrupt:
        typer.echo("Stopping Phoenix...", err=True)
        server.stop()
        typer.echo("Phoenix stopped.", err=True)
        return
    finally:
        server.stop()
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
    raise fail(
        f"Phoenix exited on its own with code {code} (log: {server.log_path})", EXIT_INTERNAL
    )


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt
