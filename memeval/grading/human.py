"""Human grades: the strict `grades.json` format, merging, and judge-vs-human agreement.

The report's grading controls export `grades.json`; `memeval grade` validates it against the
run (every entry must name a real turn with that kind of expectation) before anything is
written, and merges it into the run's own `grades.json`, newer entries winning.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memeval.errors import MemevalError
from memeval.rundir.results import GRADES_FILE, HumanGrade, Ratio, TurnVerdicts

Target = Literal["question", "write"]
GradeKey = tuple[str, int, str, str]  # (scenario, repeat, turn, target)


class GradesError(MemevalError):
    """A grades file is malformed or names something the run does not have."""


class GradeEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scenario: str
    repeat: int = 0
    turn: str
    target: Target
    verdict: Literal["pass", "fail"]
    note: str = ""
    grader: str = ""
    graded_at: str | None = None  # optional; the import time is used when absent

    @property
    def key(self) -> GradeKey:
        return (self.scenario, self.repeat, self.turn, self.target)


class GradesFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    grades: list[GradeEntry] = Field(default_factory=list)


def load_grades(path: Path) -> GradesFile:
    """Parse and validate a grades file; any problem is one line naming the entry and key."""
    path = Path(path)
    if not path.is_file():
        raise GradesError(f"{path}: no such grades file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise GradesError(f"{path}: not valid JSON ({exc})") from None
    try:
        grades = GradesFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
        raise GradesError(f"{path}: {where.lstrip('.') or 'top level'}: {first['msg']}") from None
    seen: set[GradeKey] = set()
    for i, entry in enumerate(grades.grades):
        if entry.key in seen:
            raise GradesError(
                f"{path}: grades[{i}] grades {entry.target} of {entry.scenario} "
                f"r{entry.repeat} {entry.turn} a second time; keep one entry per turn and target"
            )
        seen.add(entry.key)
    return grades


def check_against_run(grades: GradesFile, turns: Iterable[TurnVerdicts], source: str) -> None:
    """Every entry must name a turn of the run that has the graded kind of expectation."""
    gradable: dict[tuple[str, int, str], TurnVerdicts] = {}
    for t in turns:
        gradable[(t.scenario, t.repeat, t.turn)] = t
    for i, entry in enumerate(grades.grades):
        where = f"{source}: grades[{i}]"
        turn = gradable.get((entry.scenario, entry.repeat, entry.turn))
        if turn is None:
            known = sorted({k[0] for k in gradable})
            raise GradesError(
                f"{where}: turn {entry.turn!r} of scenario {entry.scenario!r} repeat "
                f"{entry.repeat} is not in this run (scenarios: {', '.join(known) or 'none'})"
            )
        check = turn.question_check if entry.target == "question" else turn.write_check
        if check is None:
            what = "a question" if entry.target == "question" else "a write expectation"
            raise GradesError(f"{where}: turn {entry.turn!r} has no {what} to grade")


def merge_grades(existing: GradesFile, new: GradesFile) -> GradesFile:
    """The union of both; an entry in `new` replaces the one for the same turn and target."""
    merged: dict[GradeKey, GradeEntry] = {e.key: e for e in existing.grades}
    now = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    for entry in new.grades:
        merged[entry.key] = (
            entry if entry.graded_at else entry.model_copy(update={"graded_at": now})
        )
    return GradesFile(grades=list(merged.values()))


def save_grades(run_dir: Path, grades: GradesFile) -> Path:
    path = Path(run_dir) / GRADES_FILE
    path.write_text(grades.model_dump_json(indent=2), encoding="utf-8")
    return path


def grades_index(grades: GradesFile) -> dict[GradeKey, HumanGrade]:
    return {
        e.key: HumanGrade(
            verdict=e.verdict, note=e.note, grader=e.grader, graded_at=e.graded_at or ""
        )
        for e in grades.grades
    }


def agreement(turns: Iterable[TurnVerdicts]) -> dict[str, Ratio]:
    """Per scenario: how often the judge's pass/fail equals the human's, over the turns and
    targets both graded (judge errors are not an opinion and are left out)."""
    counts: dict[str, Ratio] = defaultdict(Ratio)
    for t in turns:
        pairs = ((t.judge, t.human), (t.write_judge, t.write_human))
        for judge, human in pairs:
            if judge is None or human is None or judge.verdict == "error":
                continue
            ratio = counts[t.scenario]
            ratio.total += 1
            ratio.passed += judge.verdict == human.verdict
    return dict(counts)
