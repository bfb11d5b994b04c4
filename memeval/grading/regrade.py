"""`memeval grade`: merge a human grades file into a run, then re-grade, tables and report.

Without a grades file it re-grades the run as it stands (an ungraded run gets its first
verdicts.json, checks only).

Nothing is written unless every grade names a real turn of the run; judge results stored in
verdicts.json are reused, so importing grades never calls a model.
"""

from __future__ import annotations

import asyncio
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path

from memeval.grading.human import (
    GradesFile,
    check_against_run,
    load_grades,
    merge_grades,
    save_grades,
)
from memeval.grading.run import grade_run
from memeval.rundir.record import read_run
from memeval.rundir.results import GRADES_FILE, RunResults, save_results
from memeval.tables import write_tables


@dataclass
class Imported:
    results: RunResults
    imported: int  # entries in the file given
    total: int  # human grades the run now holds
    written: list[Path] = field(default_factory=list)
    report: Path | None = None


def import_grades(run_dir: Path, grades_path: Path | None = None) -> Imported:
    """Validate `grades_path` against the run, merge it into the run's grades.json (its
    entries win), re-grade, rewrite verdicts.json and the tables, re-render the report."""
    run_dir = Path(run_dir)
    read_run(run_dir)  # a clear error for a wrong directory before reading the grades
    own = run_dir / GRADES_FILE
    if grades_path is None:
        grades_path = own if own.is_file() else None
    new = load_grades(grades_path) if grades_path is not None else GradesFile()
    same_file = grades_path is not None and own.is_file() and own.samefile(grades_path)
    existing = load_grades(own) if own.is_file() and not same_file else GradesFile()
    ungraded = asyncio.run(grade_run(run_dir, None, save=False, grades=GradesFile()))
    check_against_run(new, ungraded.turns, str(grades_path))  # errors name the given file
    merged = merge_grades(existing, new)
    results = asyncio.run(grade_run(run_dir, None, save=False, grades=merged))
    written = [save_grades(run_dir, merged), save_results(run_dir, results)]
    written += write_tables(run_dir, results)
    return Imported(
        results=results,
        imported=len(new.grades),
        total=len(merged.grades),
        written=written,
        report=render_report_if_available(run_dir),
    )


def render_report_if_available(run_dir: Path) -> Path | None:
    """Re-render report.html when the report package is installed in this build."""
    if importlib.util.find_spec("memeval.report.render") is None:
        return None
    from memeval.report.render import render_report

    return render_report(run_dir)
