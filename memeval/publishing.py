"""Publishing a run's results: what `memeval run`, `memeval grade` and `memeval report` leave
behind, written in one place so the three never drift apart."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from memeval.report.render import render_report
from memeval.rundir.results import RunResults, save_results
from memeval.rundir.saved import SavedRun
from memeval.tables import write_tables
from memeval.tracing.annotations import annotate_run


@dataclass
class Published:
    report: Path
    written: list[Path] = field(default_factory=list)  # every file written, the report last
    annotations: int = 0  # grades sent to Phoenix


def publish(
    run: SavedRun, results: RunResults, *, save: bool = True, report_to: Path | None = None
) -> Published:
    """Save `results` as the run's verdicts.json, write the tables and report.html, and send
    the grades to the Phoenix the run was traced to.

    `save=False` shows results without recording them (`memeval report`): only the report is
    written, and when the run has no saved verdicts the page says it shows checks only.
    """
    written: list[Path] = []
    if save:
        written.append(save_results(run.path, results))
        run.results = results
        written += write_tables(run, results)
    checks_only = not save and run.results is None
    report = render_report(run, results, report_to, checks_only=checks_only)
    written.append(report)
    sent = annotate_run(run, results) if save else 0
    return Published(report=report, written=written, annotations=sent)
