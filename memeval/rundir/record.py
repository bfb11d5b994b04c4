"""The saved run: the single source of truth every later command reads.

A run directory `reports/<run-id>/` holds:
- `run.json`      `RunInfo` — config, models, versions, prompt/scenario hashes, the resolved
                  scenarios (so grading never needs the YAML again);
- `events.jsonl`  one `TurnRecord` per completed turn, appended as it completes (the journal
                  `--resume` continues from);
- `snapshots/<scenario>/r<repeat>/<index>-<turn>.md`  the memory after every turn;
- tables (`turns.csv`, `questions.csv`, `facts.csv`, `llm_calls.csv`), `report.html`, and
  `grades.json` once graded.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from memeval.errors import RunDirError
from memeval.rundir.comparison import is_comparison, read_comparison
from memeval.rundir.fingerprint import Fingerprint
from memeval.rundir.update import PipelineCall, Record, UpdateRecord
from memeval.scenario.schema import Expect, Question, ResolvedScenario
from reference_memory.turn import Turn

SCHEMA_VERSION = 1
RUN_FILE = "run.json"
EVENTS_FILE = "events.jsonl"
SNAPSHOTS_DIR = "snapshots"


class RunConfig(Record):
    """How the run was asked to run (`memeval run` options that shape its results)."""

    repeat: int = 1
    concurrency: int = 1
    cache: bool = True
    store: Literal["sqlite", "postgresql"] = "sqlite"
    agent: str = "chat"  # "chat" (the built-in agent) or the --agent package.module:factory
    roles: list[str] = Field(default_factory=list)  # the model roles this memory system uses
    # the next turn started as soon as the agent answered, while the update ran (--async-memory)
    async_memory: bool = False


class UnitRef(Record):
    """One planned scenario repeat."""

    scenario: str
    repeat: int = 0


class ShardInfo(Record):
    """This run directory holds one slice of a planned run (`--shard I/N`): `RunInfo.units` is
    the slice, `planned` the whole run's units in plan order (what `memeval merge` rebuilds)."""

    index: int  # 1-based
    count: int
    planned: list[UnitRef] = Field(default_factory=list)


class MergedShard(Record):
    """One shard a merged run was joined from."""

    run_id: str
    index: int
    count: int


class PhoenixTarget(Record):
    """Where the run was traced to."""

    url: str | None = None
    project: str = ""


class RunInfo(Record):
    schema_version: int = SCHEMA_VERSION
    run_id: str
    created_at: str  # ISO 8601, UTC
    finished_at: str | None = None
    status: Literal["running", "complete", "interrupted", "failed"] = "running"
    argv: list[str] = Field(default_factory=list)
    memory: str  # memory system spec: file | retrieval | core-search | ... | pkg.mod:attr
    # what the system says shapes its results (retrieval's k and context budget, core size)
    memory_settings: dict[str, Any] = Field(default_factory=dict)
    config: RunConfig = Field(default_factory=RunConfig)
    models: dict[str, str] = Field(default_factory=dict)  # role -> spec (or a given model's name)
    # role -> what served it, as the back end describes itself (its fields differ per back end)
    model_info: dict[str, dict[str, Any]] = Field(default_factory=dict)
    strategies: dict[str, str] = Field(default_factory=dict)  # e.g. updater/safety strategy
    versions: dict[str, str] = Field(default_factory=dict)
    prompt_hashes: dict[str, str] = Field(default_factory=dict)  # template path -> sha256
    scenario_hashes: dict[str, str] = Field(default_factory=dict)  # scenario file -> sha256
    scenarios: dict[str, ResolvedScenario] = Field(default_factory=dict)
    units: list[UnitRef] = Field(default_factory=list)  # planned, in order
    shard: ShardInfo | None = None  # a `--shard I/N` slice of a larger run
    merged_from: list[MergedShard] = Field(default_factory=list)  # `memeval merge` output
    phoenix: PhoenixTarget | None = None  # when traced
    error: str | None = None
    # hashes of the code, prompts, scenarios, models and settings behind the verdicts (runs
    # made before memeval recorded one have none)
    fingerprint: Fingerprint | None = None

    def title(self, scenario: str) -> str:
        found = self.scenarios.get(scenario)
        return found.title if found is not None else ""


class ToolCallRecord(Record):
    id: str = ""
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: Any = None


class ModelCall(Record):
    """Accounting for one model call of the turn, any role (`memeval.models.base.CallRecord`)."""

    role: str
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached: bool = False
    error: str | None = None
    fake: bool = False
    cost_usd: float | None = None
    cached_prompt_tokens: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class TurnRecord(Record):
    """One line of events.jsonl: everything about one turn of one scenario repeat."""

    schema_version: int = SCHEMA_VERSION
    type: Literal["turn"] = "turn"
    scenario: str
    repeat: int = 0
    index: int  # 0-based position of the turn within this scenario run
    session: str
    session_index: int
    session_kind: Literal["seed", "eval"]
    source: str  # the scenario the turn was written in (differs in combined runs)
    turn: str
    user_message: str
    messages: list[dict[str, Any]] = Field(default_factory=list)  # the turn, OpenAI format
    answer: str | None = None  # the agent's final reply on eval turns
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    memory_context: str | None = None  # what was injected for this turn
    # turn ids of earlier turns of this unit whose memory update had not landed when this
    # turn's memory was read (only under --async-memory; see rundir/staleness.py)
    pending_at_read: list[str] = Field(default_factory=list)
    expect: Expect | None = None
    question: Question | None = None
    update: UpdateRecord = Field(default_factory=UpdateRecord)
    snapshot: str = ""  # path relative to the run directory
    file_chars: int = 0
    # agent_s, update_s, turn_s; under --async-memory also lag_s (answer -> update landed)
    timings: dict[str, float] = Field(default_factory=dict)
    calls: list[ModelCall] = Field(default_factory=list)  # every role's calls
    agent_error: str | None = None
    trace_id: str | None = None
    span_id: str | None = None
    started_at: str = ""
    finished_at: str = ""

    def model_calls(self) -> list[ModelCall] | list[PipelineCall]:
        """Every model call of the turn. `calls` covers all roles; a writer that only filled
        the update report's calls is read from there instead."""
        return self.calls or self.update.calls

    def pipeline_seconds(self) -> float | None:
        """How long the memory update after this turn took."""
        if "update_s" in self.timings:
            return self.timings["update_s"]
        return self.update.timings.get("total")


def read_run(run_dir: Path) -> RunInfo:
    path = Path(run_dir) / RUN_FILE
    if not path.is_file():
        if is_comparison(Path(run_dir)):
            inside = [s.directory for s in read_comparison(Path(run_dir)).systems]
            raise RunDirError(
                f"{run_dir}: a comparison of several memory systems; pass one system's run "
                f"directory inside it: {Path(run_dir) / inside[0]} (or {', '.join(inside[1:])})"
            )
        raise RunDirError(f"{run_dir}: not a run directory (no {RUN_FILE}); pass reports/<run-id>")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise RunDirError(f"{path}: not valid JSON ({exc})") from exc
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise RunDirError(
            f"{path}: schema_version {version!r} is not supported (this memeval reads "
            f"{SCHEMA_VERSION})"
        )
    try:
        return RunInfo.model_validate(data)
    except ValidationError as exc:
        raise invalid(path, exc) from None


def write_run(run_dir: Path, info: RunInfo) -> None:
    """Atomically (re)write run.json."""
    path = Path(run_dir) / RUN_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(info.model_dump_json(indent=2), encoding="utf-8")
    os.replace(tmp, path)


def append_event(run_dir: Path, record: TurnRecord) -> None:
    """Append one complete line and fsync it: a killed run loses at most the turn in flight."""
    line = record.model_dump_json() + "\n"
    with open(Path(run_dir) / EVENTS_FILE, "a", encoding="utf-8") as fh:
        fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())


def iter_events(run_dir: Path) -> Iterator[TurnRecord]:
    """Complete turn records in file order; a torn last line (killed mid-write) is ignored."""
    path = Path(run_dir) / EVENTS_FILE
    if not path.is_file():
        return
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.endswith("\n"):
                break
            line = line.strip()
            if not line:
                continue
            try:
                yield TurnRecord.model_validate_json(line)
            except ValidationError as exc:
                raise invalid(path, exc, number) from None


def read_events(run_dir: Path) -> list[TurnRecord]:
    return list(iter_events(run_dir))


def invalid(path: Path, exc: ValidationError, line: int | None = None) -> RunDirError:
    """A one-line error naming the file (and line) and the first invalid key."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "top level"
    at = f"{path}:{line}" if line is not None else str(path)
    return RunDirError(f"{at}: invalid at {where}: {first['msg']}")


def turn_from_record(record: TurnRecord) -> Turn:
    """The pipeline's Turn for a saved turn (a resumed run replays these into memory)."""
    return Turn(messages=list(record.messages), completed=record.agent_error is None)
