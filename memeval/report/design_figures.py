"""The published design's own results (DESIGN §7.1), shown beside a run's, never mixed in.

The design reported one run per bundled scenario, graded by people reading each answer and its
trace, with write-match scored on every turn. The suites differ in size, so the report sets
rates side by side (and the run's rate as a share of the design's), never pooled counts.
"""

from __future__ import annotations

from dataclasses import dataclass

from memeval.rundir.results import Ratio, ScenarioMetrics

SOURCE = "the published design: one run, graded by people; write-match over every turn"


@dataclass(frozen=True)
class DesignFigures:
    scenario: str
    write_match: Ratio
    memory_dependent: Ratio
    memory_corruptible: Ratio
    note: str = ""


def _r(passed: int, total: int) -> Ratio:
    return Ratio(passed=passed, total=total)


FIGURES: dict[str, DesignFigures] = {
    f.scenario: f
    for f in (
        DesignFigures("book-summary", _r(22, 23), _r(7, 7), _r(3, 3)),
        DesignFigures("legal-rag", _r(7, 10), _r(3, 5), _r(3, 3)),
        DesignFigures("agent-traces", _r(13, 13), _r(6, 6), _r(3, 3)),
        DesignFigures("combined", _r(44, 48), _r(16, 18), _r(9, 9), "48 turns, 15 sessions"),
    )
}

# the design's cost and compaction figures, stated once under the summary
COST = (
    "per turn two background LLM calls and one small safety call; background step p50 "
    "≈13 s on turns without compaction, ≈67 s with. In an earlier combined run compaction "
    "ran on 22 of 48 turns and never reached its target; on 6 turns the file stayed over the "
    "cap and that turn's edits were dropped."
)


@dataclass(frozen=True)
class Share:
    """One metric: the run's rate as a share of the design's (None when either has no data)."""

    name: str
    run: Ratio
    design: Ratio

    @property
    def value(self) -> float | None:
        if self.run.rate is None or not self.design.rate:
            return None
        return self.run.rate / self.design.rate


@dataclass(frozen=True)
class DesignRow:
    figures: DesignFigures
    shares: list[Share]


def design_row(metrics: ScenarioMetrics) -> DesignRow | None:
    """The design's figures for a bundled scenario's row, with the run's share of each."""
    figures = FIGURES.get(metrics.scenario)
    if figures is None:
        return None
    shares = [
        Share("write-match", metrics.write_match, figures.write_match),
        Share("memory-dependent", metrics.memory_dependent, figures.memory_dependent),
        Share("memory-corruptible", metrics.memory_corruptible, figures.memory_corruptible),
    ]
    return DesignRow(figures, shares)
