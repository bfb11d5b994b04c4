"""memeval's command line: thin commands over library functions."""

from __future__ import annotations

import sys
from typing import Any

import typer

from memeval.cli import (  # noqa: F401  (each module registers its commands)
    calibrate_cmd,
    compare_cmd,
    gate_cmd,
    grade_cmd,
    import_cmd,
    merge_cmd,
    models_cmd,
    phoenix_cmd,
    report_cmd,
    run_cmd,
    scenarios_cmd,
)
from memeval.cli.app import app

# Typer may bundle its own click: find its ClickException through a public class's bases.
ClickException: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"
)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; a usage error (unknown option, bad value) is one line on stderr, exit 2."""
    try:
        code = app(args=argv, prog_name="memeval", standalone_mode=False)
    except ClickException as exc:
        if type(exc).__name__ != "NoArgsIsHelpError":  # that one has printed the help already
            sys.stderr.write(usage_line(exc) + "\n")
        sys.exit(getattr(exc, "exit_code", 2))
    except typer.Abort:
        sys.stderr.write("error: aborted\n")
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


def usage_line(exc: Any) -> str:
    """`error: <what is wrong> (see 'memeval run --help')` on one line."""
    message = " ".join(exc.format_message().split())
    ctx = getattr(exc, "ctx", None)
    hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
    return f"error: {message}{hint}"
