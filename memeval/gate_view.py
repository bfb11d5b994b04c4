"""The gate's report on a terminal: provenance differences, metric deltas, flaky checks."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from memeval.gate import Delta, GateReport
from memeval.provenance import Difference

SAME = "same prompts, code, scenarios, models and settings as the baseline's run"
STYLE = {"regression": "bold red", "improved": "green", "missing": "yellow", "new": "cyan"}


TESTS = {
    "strict": "one repeat on both sides: every lost check counts",
    "check+repeat": "exact tests by check and by repeat",
    "check": "exact test by check",
    "pooled": "Fisher's exact test on pooled counts",
}


def gate_table(report: GateReport) -> Table:
    table = Table(title=f"gate: run {escape(report.run_id)} vs {escape(report.baseline)}")
    for column in ("scenario", "metric", "baseline", "run", "change", "p", "status"):
        table.add_column(column, overflow="fold")
    for d in report.deltas:
        p = f"{d.p_value:.3f}" if d.p_value is not None else ""
        table.add_row(
            escape(d.scenario),
            d.metric,
            d.baseline,
            d.current,
            d.change,
            p,
            d.status,
            style=STYLE.get(d.status, "dim" if d.status == "info" else ""),
        )
    return table


def detail_lines(report: GateReport) -> list[str]:
    """For each gated metric with something to say: the test, the notes, the checks that
    failed after passing in every baseline repeat and those that pass after failing in every
    one."""
    lines = []
    for d in report.deltas:
        if d.status == "info" or not (d.note or d.broken or d.fixed or d.status == "regression"):
            continue
        parts: list[str] = [d.status]
        if d.test is not None:
            test = TESTS[d.test]
            if d.p_check is not None and d.p_repeat is not None:
                test += f", p = {d.p_check:.3f} by check, {d.p_repeat:.3f} by repeat"
            elif d.p_value is not None:
                test += f", p = {d.p_value:.3f}"
            if d.p_value is not None:
                test += f" (alpha {report.config.alpha})"
            parts.append(test)
        if d.note:
            parts.append(d.note)
        parts += check_changes(d)
        lines.append(f"{d.scenario} {d.metric}: " + "; ".join(parts))
    return lines


def status_text(d: Delta) -> str:
    """The status with its notes, in one line (JUnit messages)."""
    notes = ([d.note] if d.note else []) + check_changes(d)
    return d.status + (f" ({'; '.join(notes)})" if notes else "")


def check_changes(d: Delta) -> list[str]:
    """The checks that changed under the metric: "newly failing: …", "newly passing: …"."""
    changes = []
    if d.broken:
        changes.append("newly failing: " + names(d.broken))
    if d.fixed:
        changes.append("newly passing: " + names(d.fixed))
    return changes


def names(items: list[str], limit: int = 4) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" +{len(items) - limit} more" if len(items) > limit else "")


def difference_lines(found: list[Difference]) -> list[str]:
    """One line per differing part, or the line that says nothing differs."""
    return [d.line() for d in found] or [SAME]


def print_gate(report: GateReport, console: Console | None = None) -> None:
    console = console or Console()
    console.print("[bold]what differs from the baseline's run[/]")
    for line in difference_lines(report.differences):
        console.print(f"  {escape(line)}")
    console.print(gate_table(report))
    for line in detail_lines(report):
        console.print(f"  {escape(line)}")
    if report.flaky:
        table = Table(title="flaky in the baseline: listed, never failing the gate alone")
        for column in ("scenario", "check", "metric", "baseline", "this run"):
            table.add_column(column)
        for f in report.flaky:
            table.add_row(escape(f.row), escape(f.check), f.metric, f.baseline, f.current)
        console.print(table)
    for note in report.notes:
        console.print(f"[yellow]note[/]: {escape(note)}")
