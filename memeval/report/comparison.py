"""The comparison page: several memory systems on the same scenarios, side by side.

Per (scenario, system) the run's quality, cost and read-path size; per question, which
systems passed and, for each failure, whether the fact it needed was stored but not put in
front of the agent ("stored, not served") or never stored; and what each check means for
each system. Every string from a run is autoescaped; links are relative paths between our
own output files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from memeval.report.render import REPORT_FILE, render_template, write_atomic
from memeval.rundir.comparison import ComparisonInfo
from memeval.rundir.reach import QuestionReach
from memeval.rundir.results import ScenarioMetrics

PAGE = "report.html"
CHARS_PER_TOKEN = 4  # read-path tokens are estimated from the injected text's length

# which checks mean what for each built-in system (a [user] tag or a section is a file concept)
CHECKS_MEANING = {
    "file": "every check applies: records, forbids, [user] tags, sections, retention, compaction.",
    "core-search": "checks read the core file and, below it, the archive: a fact cut to the "
    "archive still counts as stored; [user] tags and sections apply to the core only.",
    "core-search-inject": "as core-search (the archive's top-k is injected instead of "
    "offered as a tool).",
    "retrieval": "records, forbids and retention read the stored facts; [user] tags, "
    "sections and compaction are file concepts: a fact that asks for one fails here.",
    "none": "holds nothing: write checks and retention are not meaningful.",
    "full-history": "holds the transcripts: records and retention find what was said, not "
    "what was kept; [user] tags and sections do not apply.",
    "oracle": "the scenario's hand-written files: an upper bound for the agent, not a "
    "memory system's writes.",
}
PLUGIN_MEANING = "a plugin system: checks apply as the scenario writes them."


@dataclass
class SystemRow:
    """One (scenario, system): the run's metrics plus what only a comparison asks."""

    scenario: str
    system: str
    directory: str
    metrics: ScenarioMetrics
    questions: int = 0
    failed_questions: int = 0
    stored_not_served: int = 0
    not_stored: int = 0
    read_tokens: float | None = None  # mean injected tokens per live request (≈ chars / 4)
    cached_calls: tuple[int, int] = (0, 0)  # (served by the response cache, all turn calls)
    settings: dict[str, object] = field(default_factory=dict)

    @property
    def latency_replayed(self) -> bool:
        """Most calls were replayed from the cache: the update latency was not measured."""
        hits, calls = self.cached_calls
        return calls > 0 and hits * 2 > calls


@dataclass
class QuestionRow:
    scenario: str
    turn: str
    question_type: str
    by_system: dict[str, QuestionReach | None]


@dataclass
class ComparisonView:
    path: Path
    info: ComparisonInfo
    rows: list[SystemRow]
    questions: list[QuestionRow]
    missing: list[str]  # systems whose run is absent or ungraded

    @property
    def systems(self) -> list[str]:
        return [s.system for s in self.info.systems]

    def meaning(self, system: str) -> str:
        return CHECKS_MEANING.get(system, PLUGIN_MEANING)


def render_comparison(view: ComparisonView) -> Path:
    """Write the comparison page at the top of the comparison directory."""
    reports = {
        s.system: f"{s.directory}/{REPORT_FILE}"
        for s in view.info.systems
        if (view.path / s.directory / REPORT_FILE).is_file()
    }
    html = render_template(
        "comparison.html.j2",
        view=view,
        reports=reports,
        chars_per_token=CHARS_PER_TOKEN,
        script=False,
    )
    return write_atomic(view.path / PAGE, html)
