"""`memeval grade`: merge a human grades file into a run and re-grade it.

Without a grades file it re-grades the run as it stands (an ungraded run gets its first
verdicts, checks only). Nothing is written unless every grade names a real turn of the run;
judge results stored in verdicts.json are reused, so importing grades never calls a model.
The caller publishes the results (verdicts.json, tables, report).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from memeval.grading.human import (
    GradesFile,
    check_against_run,
    load_grades,
    merge_grades,
    save_grades,
)
from memeval.grading.run import grade_run
from memeval.rundir.results import GRADES_FILE, RunResults
from memeval.rundir.saved import SavedRun


@dataclass
class Imported:
    results: RunResults
    imported: int  # entries in the file given
    total: int  # human grades the run now holds
    grades_file: Path | None = None  # the run's grades.json, when it was written


def import_grades(run: SavedRun, grades_path: Path | None = None) -> Imported:
    """Validate `grades_path` against the run, merge it into the run's grades.json (its
    entries win) and re-grade with the merged grades."""
    own = run.path / GRADES_FILE
    if grades_path is None:
        grades_path = own if own.is_file() else None
    new = load_grades(grades_path) if grades_path is not None else GradesFile()
    same_file = grades_path is not None and own.is_file() and own.samefile(grades_path)
    existing = load_grades(own) if own.is_file() and not same_file else GradesFile()
    ungraded = asyncio.run(grade_run(run, None, grades=GradesFile()))
    check_against_run(new, ungraded.turns, str(grades_path))  # errors name the given file
    merged = merge_grades(existing, new)
    results = asyncio.run(grade_run(run, None, grades=merged))
    return Imported(
        results=results,
        imported=len(new.grades),
        total=len(merged.grades),
        grades_file=save_grades(run.path, merged),
    )
