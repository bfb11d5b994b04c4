"""What changed between two graded runs: verdicts that flipped and metric deltas.

Typical use: the same scenarios before and after a prompt change. Verdicts are matched by
(scenario, turn, target); with repeats, each side is the list of its repeats' verdicts, so
"3/5 → 5/5 pass" is one row rather than five, and a check that both passed and failed in A's
repeats is marked flaky (a flip there may be noise). Before the flips, what differs between
the runs' fingerprints (prompts, code, scenarios, models, threads, cache hits) and what that
means for reading them. Reads only the two saved runs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from memeval.provenance import Difference, differences
from memeval.rundir.results import RunResults, ScenarioMetrics
from memeval.rundir.saved import SavedRun

Direction = Literal["fixed", "broke", "changed", "added", "removed"]


@dataclass
class Side:
    """One run's verdicts for one (scenario, turn, target), in repeat order."""

    verdicts: list[str]

    @property
    def passed(self) -> int:
        return self.verdicts.count("pass")

    @property
    def flaky(self) -> bool:
        """Both passed and failed across the repeats."""
        return 0 < self.passed < sum(v != "na" for v in self.verdicts)

    @property
    def rate(self) -> float | None:
        return self.passed / len(self.verdicts) if self.verdicts else None

    def __str__(self) -> str:
        if not self.verdicts:
            return "—"
        if len(self.verdicts) == 1:
            return self.verdicts[0]
        return f"{self.passed}/{len(self.verdicts)} pass"


@dataclass
class Flip:
    scenario: str
    turn: str
    target: str  # "question" | "write"
    kind: str  # question type, or "write"
    index: int  # the turn's position in its scenario run (for ordering and links)
    a: Side
    b: Side
    direction: Direction


@dataclass
class Delta:
    name: str
    a: str
    b: str
    change: str
    better: bool | None  # None: neither better nor worse (or not comparable)


@dataclass
class ScenarioDeltas:
    scenario: str
    deltas: list[Delta]

    @property
    def changed(self) -> list[Delta]:
        return [d for d in self.deltas if d.a != d.b]


@dataclass
class Comparison:
    a: SavedRun
    b: SavedRun
    flips: list[Flip] = field(default_factory=list)
    scenarios: list[ScenarioDeltas] = field(default_factory=list)
    only_a: list[str] = field(default_factory=list)  # scenarios only run A has
    only_b: list[str] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)  # fingerprint parts, A -> B

    @property
    def run_a(self) -> str:
        return self.a.run_id

    @property
    def run_b(self) -> str:
        return self.b.run_id

    @property
    def dir_a(self) -> Path:
        return self.a.path

    @property
    def dir_b(self) -> Path:
        return self.b.path

    @property
    def fixed(self) -> int:
        return sum(1 for f in self.flips if f.direction == "fixed")

    @property
    def broke(self) -> int:
        return sum(1 for f in self.flips if f.direction == "broke")


def compare_runs(a: SavedRun, b: SavedRun) -> Comparison:
    """Compare two graded runs (each needs verdicts.json: run `memeval grade` first)."""
    res_a, res_b = a.graded(), b.graded()
    cmp = Comparison(a, b)
    cmp.differences = differences(a.info.fingerprint, b.info.fingerprint)
    cmp.flips = _flips(res_a, res_b)
    names_a = [m.scenario for m in res_a.metrics]
    names_b = [m.scenario for m in res_b.metrics]
    cmp.only_a = [n for n in names_a if n not in names_b]
    cmp.only_b = [n for n in names_b if n not in names_a]
    for name in names_b:
        ma, mb = res_a.metrics_for(name), res_b.metrics_for(name)
        if ma is not None and mb is not None:
            cmp.scenarios.append(ScenarioDeltas(name, metric_deltas(ma, mb)))
    return cmp


def _sides(res: RunResults) -> dict[tuple[str, str, str], tuple[str, int, list[tuple[int, str]]]]:
    """(scenario, turn, target) -> (kind, index, [(repeat, verdict)])."""
    found: dict[tuple[str, str, str], tuple[str, int, list[tuple[int, str]]]] = {}
    for t in res.turns:
        for target, verdict, kind in (
            ("question", t.question, t.question_type or "question"),
            ("write", t.write, "write"),
        ):
            if verdict is None:
                continue
            key = (t.scenario, t.turn, target)
            entry = found.setdefault(key, (kind, t.index, []))
            entry[2].append((t.repeat, verdict.verdict))
    return found


def _flips(res_a: RunResults, res_b: RunResults) -> list[Flip]:
    sides_a, sides_b = _sides(res_a), _sides(res_b)
    flips: list[Flip] = []
    for key in list(sides_b) + [k for k in sides_a if k not in sides_b]:
        kind, index, in_b = sides_b.get(key) or sides_a[key]
        a = Side([v for _, v in sorted(sides_a[key][2])] if key in sides_a else [])
        b = Side([v for _, v in sorted(in_b)] if key in sides_b else [])
        direction = _direction(a, b)
        if direction is not None:
            scenario, turn, target = key
            flips.append(Flip(scenario, turn, target, kind, index, a, b, direction))
    order = {name: i for i, name in enumerate(dict.fromkeys(k[0] for k in [*sides_b, *sides_a]))}
    flips.sort(key=lambda f: (order[f.scenario], f.index, f.target))
    return flips


def _direction(a: Side, b: Side) -> Direction | None:
    if not a.verdicts:
        return "added"
    if not b.verdicts:
        return "removed"
    if sorted(a.verdicts) == sorted(b.verdicts):
        return None
    if a.rate == b.rate and set(a.verdicts) == set(b.verdicts):
        return None  # the same outcomes in other numbers of repeats (3/5 and 6/10)
    ra, rb = a.rate or 0.0, b.rate or 0.0
    if rb > ra:
        return "fixed"
    if rb < ra:
        return "broke"
    return "changed"


# --- metrics ---------------------------------------------------------------------------------

Better = Literal["higher", "lower", "neither"]
_Getter = Callable[[ScenarioMetrics], float | None]


_RATIOS = [
    ("write-match", "write_match"),
    ("memory-dependent", "memory_dependent"),
    ("memory-corruptible", "memory_corruptible"),
]


_NUMBERS: list[tuple[str, _Getter, Better, str]] = [
    ("compactions", lambda m: m.compactions, "neither", "{:,.0f}"),
    ("compactions reached target", lambda m: m.compactions_reached_target, "higher", "{:,.0f}"),
    ("dropped writes", lambda m: m.dropped_writes, "lower", "{:,.0f}"),
    ("rejected updates", lambda m: m.rejected_updates, "lower", "{:,.0f}"),
    ("failed updates", lambda m: m.failed_updates, "lower", "{:,.0f}"),
    ("blocked ops", lambda m: m.blocked_ops, "neither", "{:,.0f}"),
    ("LLM calls / turn", lambda m: m.model_calls_per_turn, "lower", "{:,.2f}"),
    ("tokens / turn", lambda m: m.tokens_per_turn, "lower", "{:,.0f}"),
    ("pipeline p50 (s)", lambda m: m.pipeline_latency.p50_s, "lower", "{:,.2f}"),
    ("pipeline p95 (s)", lambda m: m.pipeline_latency.p95_s, "lower", "{:,.2f}"),
    ("with compaction p50 (s)", lambda m: m.pipeline_latency_compaction.p50_s, "lower", "{:,.2f}"),
    ("with compaction p95 (s)", lambda m: m.pipeline_latency_compaction.p95_s, "lower", "{:,.2f}"),
    ("wall (s)", lambda m: m.wall_s, "neither", "{:,.1f}"),
]


def metric_deltas(a: ScenarioMetrics, b: ScenarioMetrics) -> list[Delta]:
    """Every summary metric of a scenario, A then B, with the change and whether it is better."""
    rows: list[Delta] = []
    for label, attr in _RATIOS:
        ra, rb = getattr(a, attr), getattr(b, attr)
        if ra.total == 0 and rb.total == 0:
            continue
        change, better = "", None
        if ra.rate is not None and rb.rate is not None:
            diff = (rb.rate - ra.rate) * 100
            change = f"{diff:+.0f} pts" if round(diff) else ""
            better = None if not round(diff) else diff > 0
        rows.append(Delta(label, str(ra), str(rb), change, better))
    for label, get, direction, fmt in _NUMBERS:
        va, vb = get(a), get(b)
        if va is None and vb is None:
            continue
        text_a = fmt.format(va) if va is not None else "—"
        text_b = fmt.format(vb) if vb is not None else "—"
        change, better = "", None
        if va is not None and vb is not None and text_a != text_b:
            change = _change(va, vb, fmt)
            if direction != "neither":
                better = (vb > va) == (direction == "higher")
        rows.append(Delta(label, text_a, text_b, change, better))
    return rows


def _change(va: float, vb: float, fmt: str) -> str:
    diff = fmt.replace("{:", "{:+").format(vb - va)
    if va:
        return f"{diff} ({(vb - va) / abs(va) * 100:+.0f}%)"
    return diff


def group_by_scenario(flips: list[Flip]) -> dict[str, list[Flip]]:
    grouped: dict[str, list[Flip]] = defaultdict(list)
    for f in flips:
        grouped[f.scenario].append(f)
    return dict(grouped)


# --- terminal --------------------------------------------------------------------------------

SAME_RUNS = "same prompts, code, scenarios, models and settings"

_STYLE = {
    "fixed": "green",
    "broke": "bold red",
    "changed": "yellow",
    "added": "cyan",
    "removed": "dim",
}


def print_comparison(cmp: Comparison, console: Console | None = None) -> None:
    """The flips and the changed metrics as rich tables (all text from the runs escaped)."""
    console = console or Console()
    console.print(f"A  {escape(cmp.run_a)}  ({escape(str(cmp.dir_a))})")
    console.print(f"B  {escape(cmp.run_b)}  ({escape(str(cmp.dir_b))})")
    console.print("\nwhat differs between the runs:")
    for line in [d.line() for d in cmp.differences] or [SAME_RUNS]:
        console.print(f"  {escape(line)}")
    counts = " · ".join(
        f"{sum(1 for f in cmp.flips if f.direction == d)} {d}"
        for d in ("fixed", "broke", "changed", "added", "removed")
        if any(f.direction == d for f in cmp.flips)
    )
    console.print(f"\nverdicts that flipped: {counts or 'none'}")
    if cmp.flips:
        table = Table(show_edge=False, header_style="bold")
        for col in ("scenario", "turn", "target", "A", "B", "change"):
            table.add_column(col)
        for f in cmp.flips:
            style = _STYLE[f.direction]
            table.add_row(
                escape(f.scenario),
                escape(f.turn),
                escape(f.kind),
                escape(str(f.a)),
                escape(str(f.b)),
                f"[{style}]{f.direction}[/]" + (" (flaky in A)" if f.a.flaky else ""),
            )
        console.print(table)
    for sc in cmp.scenarios:
        changed = sc.changed
        console.print(f"\nmetrics · {escape(sc.scenario)}: " + ("" if changed else "no change"))
        if not changed:
            continue
        table = Table(show_edge=False, header_style="bold")
        for col in ("metric", "A", "B", "change"):
            table.add_column(col, justify="left" if col == "metric" else "right")
        for d in changed:
            style = "green" if d.better else ("red" if d.better is False else "")
            change = f"[{style}]{escape(d.change)}[/]" if style else escape(d.change)
            table.add_row(d.name, d.a, d.b, change)
        console.print(table)
    for label, names in (("only in A", cmp.only_a), ("only in B", cmp.only_b)):
        if names:
            console.print(f"\nscenarios {label}: " + ", ".join(escape(n) for n in names))
