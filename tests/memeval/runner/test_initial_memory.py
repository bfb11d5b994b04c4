"""A session's `initial_memory`: the file system starts the session from it, the first update
builds on it, the grader tracks facts it holds, and systems without a file ignore it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from memeval.grading.run import grade_without_model
from memeval.rundir.record import read_events, read_run, write_run
from memeval.rundir.saved import SavedRun
from memeval.runner import execute
from tests.memeval.runner.test_runner import MINI, ORACLE_LINE, options

FOOTNOTES = "- [user] Cite sources as numbered footnotes, never inline links."
INITIAL = (
    "## User Profile\n- Dana, ML engineer at Acme.\n\n## Goals\n\n## Projects\n\n## Assets\n\n"
    f"## Conventions\n{FOOTNOTES}\n\n## Interaction corrections\n"
)


def scenario_file(tmp_path: Path) -> Path:
    """mini.yaml with session s1 starting from INITIAL, and s1t1 recording its footnote rule."""
    doc: dict[str, Any] = yaml.safe_load(MINI.read_text("utf-8"))
    doc["facts"]["footnotes"] = {"match": ["numbered footnotes"], "user_tagged": True}
    s1 = doc["sessions"][0]
    s1["initial_memory"] = INITIAL
    s1["turns"][0]["expect"]["records"].append("footnotes")
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "mini.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), "utf-8")
    return path


def run_options(tmp_path: Path, memory: str) -> Any:
    opts, _ = options(tmp_path / "out", memory)
    opts.targets = [str(scenario_file(tmp_path))]
    return opts


async def test_the_first_update_starts_from_the_initial_file(tmp_path: Path) -> None:
    outcome = await execute(run_options(tmp_path, "file"))
    events = read_events(outcome.run_dir)
    first = events[0]
    assert first.turn == "s1t1"
    assert first.update.file_before == INITIAL
    after = (outcome.run_dir / first.snapshot).read_text("utf-8")
    assert FOOTNOTES in after and ORACLE_LINE in after  # the update built on the file
    assert after.startswith("## User Profile\n- Dana, ML engineer at Acme.")
    # later sessions continue from memory, the initial file is set once
    assert events[1].update.file_before == after
    assert FOOTNOTES in (events[2].memory_context or "")


async def test_a_fact_of_the_initial_file_is_tracked_from_the_first_turn(tmp_path: Path) -> None:
    outcome = await execute(run_options(tmp_path, "file"))
    results = grade_without_model(SavedRun.open(outcome.run_dir))
    footnotes = next(f for f in results.facts if f.fact == "footnotes")
    assert footnotes.expected_from == "s1t1"
    assert footnotes.first_present == "s1t1"
    assert footnotes.cells == ["present"] * 4
    assert not footnotes.losses and not footnotes.absent_while_expected


async def test_systems_without_a_file_ignore_it(tmp_path: Path) -> None:
    for memory in ("none", "full-history"):
        outcome = await execute(run_options(tmp_path / memory, memory))
        events = read_events(outcome.run_dir)
        assert all(FOOTNOTES not in (e.memory_context or "") for e in events), memory
        assert all(FOOTNOTES not in (e.update.file_before or "") for e in events), memory


async def test_a_resumed_session_keeps_its_later_turns(tmp_path: Path) -> None:
    """Resumed mid-session, the unit continues from the last complete turn's file: the
    initial file is not set again over what the first turn wrote."""
    path = scenario_file(tmp_path)
    doc: dict[str, Any] = yaml.safe_load(path.read_text("utf-8"))
    thanks = dict(doc["sessions"][1]["turns"][0], id="s1t2")
    doc["sessions"][0]["turns"].append(thanks)
    path.write_text(yaml.safe_dump(doc, sort_keys=False), "utf-8")
    opts, _ = options(tmp_path / "out", "file")
    opts.targets = [str(path)]
    run_dir = (await execute(opts)).run_dir
    whole = read_events(run_dir)
    assert [e.turn for e in whole][:2] == ["s1t1", "s1t2"]

    journal = run_dir / "events.jsonl"
    journal.write_text(journal.read_text("utf-8").splitlines(keepends=True)[0], "utf-8")
    info = read_run(run_dir)
    info.status = "interrupted"
    write_run(run_dir, info)
    again, _ = options(tmp_path / "out", "file")
    again.resume = run_dir
    await execute(again)
    resumed = read_events(run_dir)
    assert [e.turn for e in resumed] == [e.turn for e in whole]
    first_file = (run_dir / resumed[0].snapshot).read_text("utf-8")
    assert ORACLE_LINE in first_file
    assert resumed[1].update.file_before == first_file != INITIAL
