"""The saved run: typed all the way down, version-1 directories still open, read once."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

import memeval
from memeval.compare import compare_runs
from memeval.errors import RunDirError
from memeval.models.base import CallRecord
from memeval.rundir.record import ModelCall
from memeval.rundir.saved import SavedRun
from memeval.rundir.update import (
    AttemptRecord,
    CompactionRecord,
    PipelineCall,
    SafetyRecord,
    UpdateRecord,
)
from memeval.scenario.schema import Expect, Question, ResolvedScenario
from memeval.systems import Closeable, Restorable, SessionAware
from memeval.systems.full_history import FullHistory
from memeval.systems.none import NoMemory
from memeval.systems.oracle import OracleMemory
from reference_memory import report as pipeline
from tests.memeval.rundirs import build_sample_run, grade_and_save


@pytest.mark.parametrize(
    ("mirror", "dataclass"),
    [
        (UpdateRecord, pipeline.UpdateReport),
        (AttemptRecord, pipeline.Attempt),
        (SafetyRecord, pipeline.SafetyVerdict),
        (CompactionRecord, pipeline.CompactionReport),
        (PipelineCall, pipeline.CallRecord),
        (ModelCall, CallRecord),
    ],
)
def test_the_typed_record_mirrors_what_the_writers_report(mirror: type, dataclass: type) -> None:
    assert list(mirror.model_fields) == [f.name for f in dataclasses.fields(dataclass)]


def _v1_run(root: Path) -> Path:
    """A run directory exactly as memeval wrote it before the record was typed."""
    root.mkdir()
    scenario = {
        "name": "book",
        "title": "Book",
        "user": "dana",
        "space": "acme",
        "path": "scenarios/book.yaml",
        "facts": {"seventy": {"match": ["70 rows"], "user_tagged": True}},
        "sessions": [
            {
                "id": "s1",
                "source": "book",
                "kind": "seed",
                "turns": [{"id": "s1t1", "user": "70 rows", "expect": {"records": ["seventy"]}}],
            }
        ],
    }
    run = {
        "schema_version": 1,
        "run_id": "old",
        "created_at": "2026-01-01T00:00:00Z",
        "status": "complete",
        "memory": "file",
        "config": {"repeat": 1, "concurrency": 1, "cache": True, "store": "sqlite"},
        "models": {"agent": "fake"},
        "scenarios": {"book": scenario},
        "units": [{"scenario": "book", "repeat": 0}],
        "phoenix": {"url": "http://127.0.0.1:6006", "project": "p"},
    }
    (root / "run.json").write_text(json.dumps(run), encoding="utf-8")
    event = {
        "schema_version": 1,
        "type": "turn",
        "scenario": "book",
        "index": 0,
        "session": "s1",
        "session_index": 0,
        "session_kind": "seed",
        "source": "book",
        "turn": "s1t1",
        "user_message": "70 rows",
        "expect": {"note": "", "records": ["seventy"], "forbids": [], "unchanged": False},
        "update": {
            "status": "written",
            "ops": [{"op": "add", "anchor": "## Conventions\n", "text": "- [user] 70 rows"}],
            "calls": [{"role": "updater", "model": "fake", "latency_s": 0.1}],
            "compaction": None,
            "timings": {"total": 0.5},
        },
        "snapshot": "snapshots/s1t1.md",
        "calls": [{"role": "updater", "model": "fake", "prompt_tokens": 3, "fake": True}],
    }
    (root / "events.jsonl").write_text(json.dumps(event) + "\n", encoding="utf-8")
    (root / "snapshots").mkdir()
    (root / "snapshots" / "s1t1.md").write_text("## Conventions\n- [user] 70 rows\n")
    return root


def test_a_version_1_run_directory_opens_typed(tmp_path: Path) -> None:
    run = SavedRun.open(_v1_run(tmp_path / "run"))
    assert isinstance(run.info.scenarios["book"], ResolvedScenario)
    assert run.info.config.repeat == 1 and run.info.config.agent == "chat"
    assert run.info.units[0].scenario == "book" and run.info.phoenix is not None
    (record,) = run.events
    assert isinstance(record.expect, Expect) and record.question is None
    assert record.update.status == "written" and record.update.ops[0]["op"] == "add"
    assert record.update.calls[0].latency_s == 0.1 and record.calls[0].tokens == 3
    assert record.pipeline_seconds() == 0.5 and run.results is None


def test_an_unknown_key_in_the_journal_is_one_line_naming_file_line_and_key(
    tmp_path: Path,
) -> None:
    run_dir = _v1_run(tmp_path / "run")
    line = json.loads((run_dir / "events.jsonl").read_text())
    line["update"]["surprise"] = 1
    (run_dir / "events.jsonl").write_text(json.dumps(line) + "\n")
    with pytest.raises(RunDirError) as info:
        SavedRun.open(run_dir)
    message = str(info.value)
    assert "\n" not in message and "events.jsonl:1" in message and "update.surprise" in message


def test_a_question_in_the_journal_is_the_scenarios_question(tmp_path: Path) -> None:
    run = SavedRun.open(build_sample_run(tmp_path / "run"))
    questions = [r.question for r in run.events if r.question is not None]
    assert questions and all(isinstance(q, Question) for q in questions)


async def test_snapshots_are_read_once_and_only_when_asked(tmp_path: Path) -> None:
    run_dir = build_sample_run(tmp_path / "run")
    run = SavedRun.open(run_dir)
    record = run.events[0]
    text = run.snapshot(record)
    (run_dir / record.snapshot).unlink()
    assert run.snapshot(record) == text  # kept from the first read
    with pytest.raises(RunDirError, match="is missing"):
        SavedRun.open(run_dir).snapshot(record)


async def test_compare_and_gate_need_no_snapshot(tmp_path: Path) -> None:
    a, b = build_sample_run(tmp_path / "a"), build_sample_run(tmp_path / "b")
    for run_dir in (a, b):
        await grade_and_save(run_dir)
        for path in (run_dir / "snapshots").rglob("*.md"):
            path.unlink()
    assert compare_runs(SavedRun.open(a), SavedRun.open(b)).flips == []


def test_the_optional_hooks_are_protocols() -> None:
    assert isinstance(OracleMemory(), SessionAware) and isinstance(OracleMemory(), Restorable)
    assert isinstance(FullHistory(), SessionAware)
    assert not isinstance(NoMemory(), SessionAware) and not isinstance(NoMemory(), Closeable)


def test_the_public_face_loads_names_on_first_use() -> None:
    code = "import sys, memeval; print(sorted(m for m in sys.modules if m.startswith('memeval')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['memeval', 'memeval.version']"
    for name in memeval.__all__:
        assert getattr(memeval, name) is not None
    with pytest.raises(AttributeError):
        _ = memeval.nothing_here  # type: ignore[attr-defined]


def test_a_public_function_is_not_shadowed_by_a_submodule_of_its_name() -> None:
    # importing every module the face names must leave each name what the face exports
    code = (
        "import importlib, inspect, memeval\n"
        "for module in sorted(set(memeval._EXPORTS.values())):\n"
        "    importlib.import_module(module)\n"
        "bad = [n for n in memeval.__all__ if n != '__version__'\n"
        "       and inspect.ismodule(getattr(memeval, n))]\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
