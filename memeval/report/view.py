"""The report's view model, built only from the saved run and the results it is given.

Arranges the turn records, the snapshots and the verdicts per scenario repeat ("unit"): a
size chart, a retention grid and turn cards.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from memeval.health import RunHealth, run_health
from memeval.report.cards import Card, build_card
from memeval.report.chart import Chart, SessionSpan, SizePoint, size_chart
from memeval.report.design_figures import DesignRow, design_row
from memeval.report.diff import FileDiff, file_diff
from memeval.report.grid import GridRow, attach_losses, grid_row
from memeval.report.links import phoenix_base, phoenix_link
from memeval.report.tags import TagRow, tag_rows
from memeval.rundir.record import RunInfo, TurnRecord
from memeval.rundir.results import JudgeCalibration, RunResults, ScenarioMetrics
from memeval.rundir.saved import SavedRun
from memeval.rundir.staleness import unit_freshness
from reference_memory import CAP, TARGET, TRIGGER

SIZE_LINES = [
    (v, f"{name} {v:,}") for v, name in ((TARGET, "target"), (TRIGGER, "trigger"), (CAP, "cap"))
]
# systems whose memory is not one capped file: the file's cap, trigger and target lines would
# mislead on their size chart (core-search's snapshot is its core plus the archive)
NOT_ONE_FILE = frozenset(
    {"retrieval", "core-search", "core-search-inject", "none", "full-history", "oracle"}
)


def size_lines(info: RunInfo) -> list[tuple[int, str]]:
    """The file's limits on the size chart, for runs whose memory is the file."""
    return [] if info.memory in NOT_ONE_FILE else SIZE_LINES


@dataclass
class ModelRow:
    role: str
    spec: str
    fake: bool


@dataclass
class Column:
    """A turn as a column of the retention grid."""

    anchor: str
    index: int
    turn: str
    start: bool  # the first turn of a session


@dataclass
class SessionBlock:
    id: str
    kind: str
    title: str
    source: str
    cards: list[Card]
    reference: FileDiff | None = None  # memory at session start -> the scenario's reference


@dataclass
class UnitView:
    anchor: str
    scenario: str
    repeat: int
    title: str
    chart: Chart
    columns: list[Column]
    grid: list[GridRow]
    sessions: list[SessionBlock]
    failing: int = 0
    description: str = ""  # the scenario's own; an imported one names its source there


@dataclass
class ReportView:
    run: RunInfo
    models: list[ModelRow]
    judge_model: str | None
    graded_at: str | None
    judge_calibration: JudgeCalibration | None
    summary: list[tuple[str, ScenarioMetrics]]  # (title, metrics)
    units: list[UnitView]
    graded: bool
    n_turns: int
    # the published design's figures, after the last summary row of each bundled scenario
    design: dict[int, DesignRow] = field(default_factory=dict)  # summary index -> row
    checks_only: bool = False  # verdicts computed for display only; verdicts.json not written
    # the memory pipeline's failures per scenario (memeval.health); None: no turns read
    health: RunHealth | None = None
    tags: list[TagRow] = field(default_factory=list)  # question results per tag
    data: dict[str, Any] = field(default_factory=dict)  # embedded as JSON for the page's script


def build_view(saved: SavedRun, results: RunResults | None) -> ReportView:
    run = saved.info
    base = phoenix_base(run.phoenix)
    units = [
        _unit(f"u{k}", saved, recs, results, base) for k, recs in enumerate(saved.planned_units())
    ]
    summary = [(run.title(m.scenario), m) for m in (results.metrics if results else [])]
    design = _design_rows([m for _, m in summary])
    models = [ModelRow(role, spec, _is_fake(spec)) for role, spec in run.models.items()]
    human = [
        {
            "scenario": c.scenario,
            "repeat": c.repeat,
            "turn": c.turn,
            "target": g.target,
            "verdict": g.human.verdict,
            "note": g.human.note,
            "grader": g.human.grader,
        }
        for u in units
        for s in u.sessions
        for c in s.cards
        for g in c.grades
        if g.human
    ]
    return ReportView(
        run=run,
        models=models,
        judge_model=results.judge_model if results else None,
        graded_at=results.graded_at if results else None,
        judge_calibration=results.judge_calibration if results else None,
        summary=summary,
        design=design,
        units=units,
        graded=results is not None,
        n_turns=len(saved.events),
        health=run_health(saved),
        tags=tag_rows(results),
        data={"runId": run.run_id, "humanGrades": human, "memories": _share_memories(units)},
    )


def _design_rows(metrics: list[ScenarioMetrics]) -> dict[int, DesignRow]:
    """The design's row for a scenario goes under its last row (its file system's, when a run
    compares systems, else the scenario's only row)."""
    rows: dict[int, DesignRow] = {}
    for i, m in enumerate(metrics):
        last = i + 1 == len(metrics) or metrics[i + 1].scenario != m.scenario
        file_rows = [x for x in metrics if x.scenario == m.scenario and x.system == "file"]
        chosen = file_rows[0] if file_rows else m
        row = design_row(chosen) if last else None
        if row is not None:
            rows[i] = row
    return rows


def _share_memories(units: list[UnitView]) -> dict[str, str]:
    """Injected memory is often identical across turns and repeats: ship each text once, in
    the page's JSON, and let the page fill a card's memory box when it is opened."""
    shared: dict[str, str] = {}
    for card in (c for u in units for s in u.sessions for c in s.cards):
        if card.memory_context is not None:
            key = hashlib.sha256(card.memory_context.encode("utf-8")).hexdigest()[:16]
            shared[key] = card.memory_context
            card.memory_key = key
    return shared


def card_anchors(saved: SavedRun) -> dict[tuple[str, int, str], str]:
    """(scenario, repeat, turn) -> the element id of its card, as `build_view` assigns them."""
    return {
        (rec.scenario, rec.repeat, rec.turn): f"u{k}-t{rec.index}"
        for k, recs in enumerate(saved.planned_units())
        for rec in recs
    }


def _unit(
    anchor: str,
    saved: SavedRun,
    recs: list[TurnRecord],
    results: RunResults | None,
    base: str | None,
) -> UnitView:
    run = saved.info
    scenario, repeat = recs[0].scenario, recs[0].repeat
    cards: list[Card] = []
    befores: dict[int, str] = {}
    previous: str | None = None
    freshness = unit_freshness(recs, saved.shown_snapshot)
    for rec, fresh in zip(recs, freshness, strict=True):
        after = saved.shown_snapshot(rec)
        before = previous if previous is not None else rec.update.file_before
        befores[rec.index] = before
        verdicts = results.turn(scenario, repeat, rec.turn) if results else None
        link = phoenix_link(base, rec.trace_id, rec.span_id)
        cards.append(
            build_card(
                rec,
                unit=anchor,
                before=before,
                after=after,
                verdicts=verdicts,
                trace_url=link,
                freshness=fresh,
            )
        )
        previous = after
    facts = [
        f
        for f in (results.facts if results else [])
        if (f.scenario, f.repeat) == (scenario, repeat)
    ]
    sessions = _sessions(run, scenario, cards, befores)
    grid = [grid_row(run, f, cards) for f in facts]
    attach_losses(facts, cards)
    starts = {s.cards[0].index for s in sessions}
    return UnitView(
        anchor=anchor,
        scenario=scenario,
        repeat=repeat,
        title=run.title(scenario),
        chart=_chart(cards, sessions, size_lines(run)),
        columns=[Column(c.anchor, c.index, c.turn, c.index in starts) for c in cards],
        grid=grid,
        sessions=sessions,
        failing=sum(1 for c in cards if c.failing),
        description=resolved.description if (resolved := run.scenarios.get(scenario)) else "",
    )


def _sessions(
    run: RunInfo, scenario: str, cards: list[Card], befores: dict[int, str]
) -> list[SessionBlock]:
    resolved = run.scenarios.get(scenario)
    specs = {s.id: s for s in resolved.sessions} if resolved is not None else {}
    blocks: list[SessionBlock] = []
    for card in cards:
        if not blocks or blocks[-1].id != card.session:
            spec = specs.get(card.session)
            reference = spec.reference_memory if spec is not None else None
            blocks.append(
                SessionBlock(
                    card.session,
                    card.kind,
                    spec.title if spec is not None else "",
                    card.source,
                    [],
                    file_diff(befores.get(card.index, ""), reference)
                    if reference is not None
                    else None,
                )
            )
        blocks[-1].cards.append(card)
    return blocks


def _chart(cards: list[Card], sessions: list[SessionBlock], lines: list[tuple[int, str]]) -> Chart:
    points = []
    for c in cards:
        comp = c.compaction
        mark = None
        if comp:
            after = comp.after_chars if comp.accepted else c.file_chars
            mark = (comp.before_chars, after, comp.reached_target and comp.accepted)
        points.append(
            SizePoint(c.index, c.file_chars, c.anchor, c.turn, mark, c.status == "dropped-over-cap")
        )
    spans = [SessionSpan(s.cards[0].index, s.cards[-1].index, s.id, s.kind) for s in sessions]
    return size_chart(points, spans, lines)


def _is_fake(spec: str) -> bool:
    return spec == "fake" or spec.startswith("fake:")
