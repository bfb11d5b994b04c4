"""comparison.json: the record of a run of several memory systems on the same scenarios
(`memeval run --memory a,b,c`), one complete run per system in a sub-directory."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from memeval.errors import RunDirError
from memeval.rundir.update import Record

COMPARISON_FILE = "comparison.json"


class SystemRun(Record):
    system: str
    directory: str  # the sub-directory holding this system's run
    exit_code: int | None = None  # None until the system's run has finished


class ComparisonInfo(Record):
    run_id: str
    created_at: str
    argv: list[str] = Field(default_factory=list)
    scenarios: list[str] = Field(default_factory=list)  # their names
    targets: list[str] = Field(default_factory=list)  # as given (names or YAML paths)
    systems: list[SystemRun] = Field(default_factory=list)


def is_comparison(path: Path) -> bool:
    return (Path(path) / COMPARISON_FILE).is_file()


def read_comparison(path: Path) -> ComparisonInfo:
    file = Path(path) / COMPARISON_FILE
    try:
        return ComparisonInfo.model_validate_json(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RunDirError(f"{path}: cannot read {COMPARISON_FILE} ({exc})") from exc
    except ValueError as exc:
        raise RunDirError(f"{file}: not a valid comparison file ({exc})") from exc


def write_comparison(path: Path, info: ComparisonInfo) -> None:
    tmp = Path(path) / (COMPARISON_FILE + ".tmp")
    tmp.write_text(info.model_dump_json(indent=2) + "\n", encoding="utf-8")
    tmp.replace(Path(path) / COMPARISON_FILE)
