"""The typer application and the one place errors become exit codes.

Exit codes: 0 done; 1 regression found; 2 bad input (one line, no traceback); 3 internal error;
4 `memeval run` / `memeval merge`: the memory pipeline failed on most of the run (more than
half of its memory updates, or of one role's model calls; memeval.health), which outranks 1.
"""

from __future__ import annotations

import functools
import sys
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from memeval.errors import MemevalError

EXIT_OK, EXIT_REGRESSION, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_UNHEALTHY = 0, 1, 2, 3, 4

app = typer.Typer(
    name="memeval",
    help="Evaluate agent long-term memory: replay scenarios, grade, report, gate.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
scenarios_app = typer.Typer(
    help="List, validate, show and calibrate scenarios.", no_args_is_help=True
)
app.add_typer(scenarios_app, name="scenarios")

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str, code: int = EXIT_BAD_INPUT) -> typer.Exit:
    """Print one line on stderr and return the Exit to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def handle_errors(fn: F) -> F:
    """Turn MemevalError into one line + exit 2, anything unexpected into exit 3."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except MemevalError as exc:
            raise fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
        except KeyboardInterrupt:
            raise fail("interrupted", 130) from None
        except BrokenPipeError:
            # The reader went away (`memeval ... | head`): stop quietly, like any CLI tool.
            _silence_stdout()
            raise typer.Exit(EXIT_OK) from None
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            raise fail(f"internal error: {type(exc).__name__}: {exc}", EXIT_INTERNAL) from None

    return wrapper  # type: ignore[return-value]


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot raise again."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
