"""`memeval import locomo|letta FILE --out PATH.yaml`: public benchmark data as a scenario.

The user supplies the dataset file; the scenario written validates with `memeval scenarios
validate` and runs with `memeval run PATH.yaml`. Bad input is one line and exit 2, and an
existing file at --out is replaced only by a scenario that validates.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated, Any

import typer

from memeval.cli.app import app, handle_errors
from memeval.importers.common import Source

import_app = typer.Typer(
    help="Turn public memory-benchmark files (LoCoMo, Letta's update set) into scenarios.",
    no_args_is_help=True,
)
app.add_typer(import_app, name="import")

FileArg = Annotated[Path, typer.Argument(metavar="FILE", help="The dataset file you supply.")]
OutOption = Annotated[
    Path, typer.Option("--out", metavar="PATH.yaml", help="Where to write the scenario.")
]


@import_app.command("locomo")
@handle_errors
def import_locomo_command(
    file: FileArg,
    out: OutOption,
    sample: Annotated[
        str | None,
        typer.Option(metavar="ID", help="The sample_id to import (needed when FILE has several)."),
    ] = None,
    sessions: Annotated[
        int | None,
        typer.Option(
            metavar="N",
            help="Keep the first N sessions and only the questions whose evidence lies in them.",
        ),
    ] = None,
    f1_min: Annotated[
        float | None,
        typer.Option(
            "--f1-min",
            metavar="F1",
            help="Make answer_f1 a check: fail answers below this token F1 (default: reported).",
        ),
    ] = None,
) -> None:
    """One LoCoMo conversation sample (locomo10.json) as a scenario."""
    from memeval.importers.locomo import import_locomo

    doc, source = import_locomo(file, sample=sample, sessions=sessions, f1_min=f1_min)
    args = ["locomo", str(file), "--out", str(out)]
    args += ["--sample", sample] if sample else []
    args += ["--sessions", str(sessions)] if sessions else []
    args += ["--f1-min", f"{f1_min:g}"] if f1_min is not None else []
    _write(doc, source, out, args)


@import_app.command("letta")
@handle_errors
def import_letta_command(
    file: FileArg,
    out: OutOption,
    rows: Annotated[
        int | None, typer.Option(metavar="N", help="Keep the first N rows (default: all).")
    ] = None,
) -> None:
    """Letta's core-memory-update set (JSONL) as one scenario: facts, correction, question."""
    from memeval.importers.letta import import_letta

    doc, source = import_letta(file, rows=rows)
    args = ["letta", str(file), "--out", str(out)] + (["--rows", str(rows)] if rows else [])
    _write(doc, source, out, args)


def _write(doc: dict[str, Any], source: Source, out: Path, args: list[str]) -> None:
    from memeval.importers.common import write_scenario

    scenario = write_scenario(doc, source, out, "memeval import " + shlex.join(args))
    turns = [t for s in scenario.sessions for t in s.turns]
    questions = sum(1 for t in turns if t.question is not None)
    typer.echo(
        f"wrote {out}: scenario {scenario.name}, {len(scenario.sessions)} sessions,"
        f" {len(turns)} turns ({questions} questions); kept {source.selection}"
    )
    typer.echo(f"run it: memeval run {shlex.quote(str(out))}")
