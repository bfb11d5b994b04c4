"""The facts x turns retention grid, and the losses each turn card explains.

A lost cell links to the card of the turn that lost the fact; that card names the culprit
(the edit op with its text, or the compaction) from the graded fact retention.
"""

from __future__ import annotations

from dataclasses import dataclass

from memeval.report.cards import Card, pretty
from memeval.rundir.record import RunInfo
from memeval.rundir.results import Culprit, FactRetention


@dataclass
class GridCell:
    state: str
    href: str | None
    title: str


@dataclass
class GridRow:
    fact: str
    description: str
    cells: list[GridCell]
    lost: int


def grid_row(run: RunInfo, fact: FactRetention, cards: list[Card]) -> GridRow:
    """One fact's row: its state after every turn of the unit, losses linked to their turn."""
    turns = fact.turns or [c.turn for c in cards]
    losses = {loss.turn: loss for loss in fact.losses}
    state_of = dict(zip(turns, fact.cells, strict=False))
    cells: list[GridCell] = []
    for card in cards:
        state = state_of.get(card.turn, "absent")
        title = f"{fact.fact} after {card.turn}: {state}"
        href = None  # only a loss links (to its turn); other cells are titled by the page
        if state == "lost":
            href = card.anchor
            if card.turn in losses:
                title += f" — {_culprit_text(losses[card.turn].culprit)}"
        cells.append(GridCell(state, href, title))
    scenario = run.scenarios.get(fact.scenario)
    spec = scenario.facts.get(fact.fact) if scenario is not None else None
    desc = (spec.description or " · ".join(spec.match)) if spec is not None else ""
    return GridRow(fact.fact, desc, cells, lost=len(fact.losses))


def attach_losses(facts: list[FactRetention], cards: list[Card]) -> None:
    """Tell each card which facts were lost at its turn, and by what."""
    by_turn = {c.turn: c for c in cards}
    for fact in facts:
        for loss in fact.losses:
            card = by_turn.get(loss.turn)
            if card is not None:
                culprit = loss.culprit
                detail = pretty(culprit.op) if culprit.op else culprit.excerpt
                card.losses.append(
                    {"fact": fact.fact, "text": _culprit_text(culprit), "detail": detail}
                )


def _culprit_text(culprit: Culprit) -> str:
    kind = culprit.kind
    if kind == "op":
        op = culprit.op or {}
        name = op.get("op") or op.get("kind") or "op"
        return f"removed by edit op #{culprit.op_index} ({name})"
    if kind == "compaction":
        return "removed by compaction"
    return "removed by an unknown cause"
