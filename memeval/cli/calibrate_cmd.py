"""`memeval scenarios calibrate`: grade every control answer with the checks and the judge.

Exit 0 when every control got its known verdict from the checks, 1 when one did not (each
such control is named), 2 on bad input. The judge's agreement is printed, never gated.
Scenario and model text reaches the terminal only as rich `Text`.
"""

from __future__ import annotations

import asyncio
from itertools import groupby
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from memeval.cli.app import EXIT_REGRESSION, handle_errors, scenarios_app
from memeval.errors import ConfigError
from memeval.grading.calibrate import Calibration, Control, ControlResult

STYLE = {"pass": "green", "fail": "red", "not-attempted": "magenta", "error": "yellow"}


@scenarios_app.command("calibrate")
@handle_errors
def calibrate_command(
    targets: Annotated[
        list[str] | None,
        typer.Argument(metavar="NAME_OR_PATH...", help="Scenario names or YAML paths."),
    ] = None,
    model_judge: Annotated[
        str | None,
        typer.Option(metavar="SPEC", help="The judge: openai:MODEL | local:NAME (default: local)."),
    ] = None,
    no_judge: Annotated[bool, typer.Option("--no-judge", help="Checks only.")] = False,
    judge_strategy: Annotated[
        str | None,
        typer.Option(metavar="NAME", help="Judge strategy (default: chosen for the model)."),
    ] = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Bypass the response cache.")
    ] = False,
) -> None:
    """Grade every control answer with the checks and the judge; exit 1 on a defect."""
    from memeval.grading.calibrate import load_controls, run_calibration

    if not targets:
        raise ConfigError("name at least one scenario (see `memeval scenarios list`)")
    controls = load_controls(targets)
    if not controls:
        raise ConfigError(f"no control answers in {', '.join(targets)} (questions need controls:)")
    if no_judge:
        outcome = asyncio.run(run_calibration(controls, None, strategy=judge_strategy))
    else:
        outcome = _with_judge(controls, model_judge, judge_strategy, not no_cache)
    console = Console()
    console.print(calibration_table(outcome))
    for line in summary_lines(outcome):
        console.print(line)
    if outcome.defects:
        raise typer.Exit(EXIT_REGRESSION)


def _with_judge(
    controls: list[Control], spec: str | None, strategy: str | None, cache: bool
) -> Calibration:
    from memeval.grading.calibrate import run_calibration
    from memeval.grading.judge import judge_deadline
    from memeval.grading.judge_strategies import strategy_for
    from memeval.models.pool import ModelPool, cache_path
    from memeval.models.spec import parse_spec, resolve_specs
    from memeval.tracing.spans import setup_tracing

    specs = resolve_specs(None, {"judge": parse_spec(spec) if spec else None})
    strategy_for(strategy, str(specs["judge"]))  # an unknown name fails before a model loads
    pool = ModelPool({"judge": specs["judge"]}, cache_path() if cache else None)
    try:
        judge = pool.for_unit(["judge"], 0, [], setup_tracing(None, "memeval"))["judge"]
        deadline = judge_deadline(specs["judge"])
        return asyncio.run(run_calibration(controls, judge, strategy=strategy, timeout_s=deadline))
    finally:
        pool.close()


def calibration_table(outcome: Calibration) -> Table:
    judged = outcome.judge is not None
    title = "Control answers: known verdict against checks" + (" and judge" if judged else "")
    table = Table(title=title)
    for column in ("question", "type", "control", "known", "checks"):
        table.add_column(column, no_wrap=True)
    if judged:
        table.add_column("judge", no_wrap=True)
    table.add_column("answer", no_wrap=True, overflow="ellipsis", max_width=60)

    def key(r: ControlResult) -> tuple[str, str]:
        return (r.control.scenario, r.control.turn.id)

    for (scenario, turn), group in groupby(outcome.results, key=key):
        for n, result in enumerate(group):
            control = result.control
            question = control.turn.question
            kind = question.type.removeprefix("memory-") if question else ""
            row: list[Text | str] = [
                Text(f"{scenario}/{turn}" if n == 0 else ""),
                kind if n == 0 else "",
                control.label,
                Text(control.known, style=STYLE[control.known]),
                _verdict(result.check.verdict, result.checks_right),
            ]
            if judged:
                verdict = result.judge.verdict if result.judge else "-"
                row.append(_verdict(verdict, result.judge_right))
            row.append(Text(_short(control.answer.answer)))
            table.add_row(*row, end_section=False)
        table.add_section()
    return table


def summary_lines(outcome: Calibration) -> list[Text]:
    decided = [r for r in outcome.results if r.checks_right is not None]
    wrong = outcome.defects
    right = len(decided) - len(wrong)
    counted = f"checks: {right}/{len(decided)} controls got their known verdict"
    if undecided := len(outcome.results) - len(decided):
        counted += f"; {undecided} no check decides (left to the judge)"
    lines = [Text(counted)]
    for result in wrong:
        control = result.control
        line = Text("defect: ", style="red bold")
        line.append(
            f"{control.scenario}/{control.turn.id} {control.label}: the checks say "
            f"{result.check.verdict} (known {control.known}): {result.check.reason}"
        )
        lines.append(line)
    judge = outcome.judge
    if judge is not None:
        accuracy = f"{judge.correct}/{judge.graded}"
        if judge.accuracy is not None:
            accuracy += f" ({judge.accuracy:.0%})"
        precision = (
            f"{judge.said_fail_right}/{judge.said_fail} ({judge.precision_on_fail:.0%})"
            if judge.precision_on_fail is not None
            else "- (never said fail)"
        )
        text = (
            f"judge {judge.model} ({judge.strategy}): accuracy {accuracy} · precision on fail "
            f"{precision} · could not grade {judge.could_not_grade} · not attempted "
            f"{judge.not_attempted}"
        )
        lines.append(Text(text, style="yellow" if judge.low_trust else ""))
        if judge.low_trust:
            lines.append(Text("judge verdicts are low-trust: accuracy under 90% on the controls"))
        if judge.model == "fake":
            lines.append(Text("note: the judge ran on `fake`, a stand-in that is not a model"))
    return lines


def _verdict(verdict: str, right: bool | None) -> Text:
    text = Text(verdict, style=STYLE.get(verdict, ""))
    if right is False:
        text.append(" ✗", style="bold red")
    return text


def _short(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
