"""`memeval scenarios list | validate | show | schema`: thin commands over memeval.scenario.

Scenario text is untrusted: it reaches the terminal only as rich `Text`, never as markup.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from memeval.cli.app import EXIT_BAD_INPUT, handle_errors, scenarios_app
from memeval.errors import ScenarioError
from memeval.scenario.jsonschema import scenario_json_schema
from memeval.scenario.loader import check_paths, list_bundled, resolve
from memeval.scenario.overview import QUESTION_TYPES, first_recorded, overview
from memeval.scenario.schema import ResolvedScenario, TurnSpec
from memeval.scenario.yamlsource import display_path


def _short(text: str, width: int = 70) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@scenarios_app.command("list")
@handle_errors
def list_command() -> None:
    """List the scenarios you can run by name, with their sizes."""
    table = Table(title="Scenarios", caption="questions by type: memory-dependent, -corruptible")
    table.add_column("name", no_wrap=True)
    table.add_column("title")
    for column in ("sessions", "turns", "dependent", "corruptible"):
        table.add_column(column, justify="right", no_wrap=True)
    results = check_paths(list(list_bundled()))
    errors = []
    for path, result in results:
        name = Text(Path(path).stem)  # the name it runs by
        if isinstance(result, ScenarioError):
            errors.append(result)
            table.add_row(name, Text("invalid (see below)", style="red"))
            continue
        view = overview(result)
        counts = [str(view.questions[kind]) for kind in QUESTION_TYPES]
        table.add_row(name, Text(view.title), str(view.sessions), str(view.turns), *counts)
    Console().print(table)
    if not results:
        typer.echo("no scenarios found (see MEMEVAL_SCENARIO_PATH)", err=True)
    for error in errors:
        typer.echo(f"error: {error}", err=True)
    if errors:
        raise typer.Exit(EXIT_BAD_INPUT)


@scenarios_app.command("validate")
@handle_errors
def validate_command(
    paths: Annotated[
        list[str] | None, typer.Argument(help="Scenario files or names (default: all by name).")
    ] = None,
) -> None:
    """Validate scenario files: one OK line or the first error per file; exit 2 if any fail."""
    targets: list[str | Path] = list(paths) if paths else list(list_bundled())
    failed = False
    for item, result in check_paths(targets):
        if isinstance(result, ScenarioError):
            failed = True
            typer.echo(f"error: {result}", err=True)
        else:
            view = overview(result)
            asked = sum(view.questions.values())
            sizes = f"{view.sessions} sessions, {view.turns} turns, {asked} questions"
            typer.echo(f"OK {display_path(Path(item))} ({view.name}: {sizes}, {view.facts} facts)")
    if failed:
        raise typer.Exit(EXIT_BAD_INPUT)


@scenarios_app.command("show")
@handle_errors
def show_command(name: Annotated[str, typer.Argument(help="A scenario name or file.")]) -> None:
    """Show a scenario's sessions, turns, questions, facts and tools."""
    resolved = resolve(name)
    console = Console()
    head = Text()
    head.append(resolved.name, style="bold")
    head.append(f" — {resolved.title}\n" if resolved.title else "\n")
    head.append(f"user {resolved.user} · space {resolved.space} · {', '.join(resolved.files)}")
    console.print(head)
    console.print(_sessions_tree(resolved))
    console.print(_facts_table(resolved))
    console.print(_tools_table(resolved))


def _sessions_tree(resolved: ResolvedScenario) -> Tree:
    tree = Tree(Text(f"{len(resolved.sessions)} sessions"))
    for session in resolved.sessions:
        label = Text(f"{session.id} ", style="bold")
        label.append(f"[{session.kind}]", style="cyan" if session.kind == "seed" else "magenta")
        if session.title:
            label.append(f" {session.title}")
        if session.reference_memory is not None:
            label.append(f" (reference memory: {len(session.reference_memory)} chars)", "dim")
        branch = tree.add(label)
        for turn in session.turns:
            branch.add(_turn_label(turn))
    return tree


def _turn_label(turn: TurnSpec) -> Text:
    text = Text(f"{turn.id}: ", style="bold")
    text.append(_short(turn.user))
    if turn.question is not None:
        q = turn.question
        text.append(f"\n  {q.type}: ", style="yellow")
        text.append(_short(q.criterion, 90))
    if turn.expect is not None:
        e = turn.expect
        parts = [f"records {', '.join(e.records)}"] if e.records else []
        parts += [f"forbids {len(e.forbids)}"] if e.forbids else []
        parts += ["unchanged"] if e.unchanged else []
        text.append(f"\n  expect: {'; '.join(parts) or '-'}", style="green")
    return text


def _facts_table(resolved: ResolvedScenario) -> Table:
    table = Table(title=f"{len(resolved.facts)} facts")
    for column in ("fact", "match (any of)", "[user]", "section", "first recorded", "until"):
        table.add_column(column, overflow="fold")
    first = first_recorded(resolved)
    for fid, fact in resolved.facts.items():
        table.add_row(
            Text(fid),
            Text(" | ".join(fact.match)),
            "yes" if fact.user_tagged else "",
            Text(fact.section or ""),
            Text(first.get(fid, "never")),
            Text(fact.until or ""),
        )
    return table


def _tools_table(resolved: ResolvedScenario) -> Table:
    table = Table(title=f"{len(resolved.tools)} tools")
    for column in ("tool", "description", "responses"):
        table.add_column(column)
    for tool in resolved.tools:
        table.add_row(Text(tool.name), Text(_short(tool.description)), str(len(tool.responses)))
    return table


@scenarios_app.command("schema")
@handle_errors
def schema_command() -> None:
    """Print the JSON Schema of scenario files (for editors)."""
    typer.echo(json.dumps(scenario_json_schema(), indent=2))
