"""memeval's command line: thin commands over library functions."""

from __future__ import annotations

from memeval.cli import (  # noqa: F401  (each module registers its commands)
    compare_cmd,
    gate_cmd,
    grade_cmd,
    phoenix_cmd,
    report_cmd,
    run_cmd,
    scenarios_cmd,
)
from memeval.cli.app import app


def main() -> None:
    app(prog_name="memeval")
