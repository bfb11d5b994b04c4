"""`--async-memory`: the next turn starts while the previous turn's memory update runs.

A back-to-back follow-up reads memory that is missing the update still in flight (a stale
read) under async memory and not without it; a think time long enough for the update to land
makes the read current again. Stale reads come from the saved run: the journal's
`pending_at_read`, the report, the tables and the metrics.
"""

from __future__ import annotations

import csv
import itertools
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memeval.cli.app import app
from memeval.finish import finish_run
from memeval.models.base import ChatResponse
from memeval.models.scripted import FunctionModel
from memeval.rundir.record import read_events, read_run
from memeval.rundir.saved import SavedRun
from memeval.rundir.staleness import run_freshness
from memeval.runner import RunOptions, execute

LINE = "- [user] The codeword is PELICAN."

SCENARIO = """\
version: 1
name: follow-up
user: dana
space: acme-ml
facts:
  codeword: {{match: [PELICAN]}}
sessions:
  - id: s1
    kind: eval
    think_time_s: {think}
    turns:
      - id: q0
        user: "Hello there."
        question: {{type: memory-corruptible, criterion: Greets., answer_matches: [[Noted]]}}
      - id: q1
        user: "Remember this: the codeword is PELICAN."
        expect: {{records: [codeword]}}
        question: {{type: memory-corruptible, criterion: Notes it., answer_matches: [[Noted]]}}
      - id: q2
        user: "What is the codeword?"
        question:
          type: memory-dependent
          criterion: Says PELICAN.
          answer_matches: [[PELICAN]]
"""


def agent_fn(messages: list[dict[str, Any]], tools: Any, schema: Any) -> ChatResponse:
    """Answers from the memory message only (the first system message is the agent's own)."""
    memory = " ".join(str(m["content"]) for m in messages[1:] if m["role"] == "system")
    if "codeword" in str(messages[-1]["content"]).lower() and "?" in messages[-1]["content"]:
        found = "PELICAN" if "PELICAN" in memory else "not in memory"
        return ChatResponse(content=f"The codeword: {found}.")
    return ChatResponse(content="Noted.")


def pipeline_fn(messages: list[dict[str, Any]], tools: Any, schema: Any) -> Any:
    """Summarizer echoes the user; the updater stores the codeword once; safety allows."""
    text = "\n".join(str(m.get("content") or "") for m in messages)
    if schema is None:
        return "The user gave the codeword PELICAN." if "is PELICAN" in text else "Small talk."
    if "verdict" in schema.get("properties", {}):
        return {"verdict": "allow", "reason": "a plain fact"}
    if "PELICAN" in str(messages[-1]["content"]) and LINE not in text:
        return {"ops": [{"op": "add", "anchor": "## Conventions", "text": LINE}]}
    return {"ops": []}


def scenario(tmp_path: Path, think: float = 0) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / f"follow-up-{think}.yaml"
    path.write_text(SCENARIO.format(think=think), encoding="utf-8")
    return path


def options(tmp_path: Path, *, async_memory: bool, think: float = 0) -> RunOptions:
    pipeline = FunctionModel(pipeline_fn, name="scripted-pipeline")
    chat = {"agent": FunctionModel(agent_fn, name="scripted-agent"), "judge": pipeline}
    chat |= dict.fromkeys(("summarizer", "updater", "safety", "compactor"), pipeline)
    return RunOptions(
        targets=[str(scenario(tmp_path, think))],
        memory="file",
        out=tmp_path / "reports",
        cache=False,
        progress=False,
        chat_models=chat,
        async_memory=async_memory,
    )


async def play(tmp_path: Path, *, async_memory: bool, think: float = 0) -> SavedRun:
    outcome = await execute(options(tmp_path, async_memory=async_memory, think=think))
    await finish_run(outcome.run_dir, judge=False)
    return SavedRun.open(outcome.run_dir)


def turns_csv(run: SavedRun) -> dict[str, dict[str, str]]:
    with open(run.path / "turns.csv", encoding="utf-8") as fh:
        return {row["turn"]: row for row in csv.DictReader(fh)}


async def test_a_back_to_back_follow_up_reads_stale_memory_only_under_async(
    tmp_path: Path,
) -> None:
    waited = await play(tmp_path / "sync", async_memory=False)
    raced = await play(tmp_path / "async", async_memory=True)

    # the same update lands either way: q1 writes the codeword
    for run in (waited, raced):
        q1 = run.events[1]
        assert q1.update.status == "written" and LINE in run.snapshot(q1)
    assert not waited.info.config.async_memory and raced.info.config.async_memory
    assert read_run(raced.path).config.async_memory  # recorded in run.json
    fingerprints = [r.info.fingerprint for r in (waited, raced)]
    assert fingerprints[0] is not None and fingerprints[1] is not None
    assert "memory updates" not in fingerprints[0].settings
    assert fingerprints[1].settings["memory updates"] == "async"  # a baseline tells them apart

    # without async memory q2 waited for q1's update: current memory, the right answer
    q2 = waited.events[2]
    assert q2.pending_at_read == [] and LINE in (q2.memory_context or "")
    assert q2.answer == "The codeword: PELICAN."
    assert not any(f.stale for f in run_freshness(waited).values())

    # with it, q2 read memory while q1's update was in flight, and answered without it
    q2 = raced.events[2]
    assert "q1" in q2.pending_at_read and LINE not in (q2.memory_context or "")
    assert q2.answer == "The codeword: not in memory."
    fresh = run_freshness(raced)
    assert fresh[("follow-up", 0, "q2")].stale
    assert fresh[("follow-up", 0, "q2")].missed == ("q1",)  # q0's update changed nothing
    # q1 read while q0's update ran, but that update changed nothing: current, not stale
    assert fresh[("follow-up", 0, "q1")].in_flight == ("q0",)
    assert not fresh[("follow-up", 0, "q1")].stale

    # what a reader sees: tables, metrics, report
    rows = turns_csv(raced)
    assert [rows[t]["stale_read"] for t in ("q0", "q1", "q2")] == ["False", "False", "True"]
    assert "q1" in rows["q2"]["pending_at_read"].split() and float(rows["q2"]["lag_s"]) >= 0
    assert turns_csv(waited)["q2"]["stale_read"] == "False"
    assert turns_csv(waited)["q2"]["lag_s"] == ""
    (m,) = raced.graded().metrics
    assert (m.memory_reads, m.stale_reads, m.update_lag.n) == (3, 1, 3)
    (m,) = waited.graded().metrics
    assert (m.memory_reads, m.stale_reads, m.update_lag.n) == (3, 0, 0)
    html = (raced.path / "report.html").read_text(encoding="utf-8")
    assert html.count('class="badge stale"') == 1 and "after the answer" in html
    assert "memory updates</span> async" in html
    assert 'class="badge stale"' not in (waited.path / "report.html").read_text("utf-8")


async def test_a_think_time_long_enough_for_the_update_makes_the_read_current(
    tmp_path: Path,
) -> None:
    run = await play(tmp_path, async_memory=True, think=1.0)
    q2 = run.events[2]
    assert q2.pending_at_read == [] and LINE in (q2.memory_context or "")
    assert q2.answer == "The codeword: PELICAN."
    assert not any(f.stale for f in run_freshness(run).values())


async def test_each_turn_keeps_its_own_model_calls_while_updates_overlap(tmp_path: Path) -> None:
    run = await play(tmp_path, async_memory=True)
    roles = {e.turn: sorted(c.role for c in e.calls) for e in run.events}
    # every turn: its agent call, then its own summarizer and updater (and safety on a write)
    assert roles["q1"] == ["agent", "safety", "summarizer", "updater"]
    assert roles["q0"] == roles["q2"] == ["agent", "summarizer", "updater"]
    assert [e.index for e in read_events(run.path)] == [0, 1, 2]  # journaled in turn order


async def test_updates_of_one_key_never_interleave_under_async(tmp_path: Path) -> None:
    """Every update reads the file the previous one left: the pipeline's lock serializes
    them even though the harness started them back to back."""
    run = await play(tmp_path, async_memory=True)
    files = [e.update for e in run.events]
    for previous, current in itertools.pairwise(files):
        assert current.file_before == previous.file_after


def test_the_cli_records_async_mode(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            *("run", str(scenario(tmp_path)), "--model", "fake", "--async-memory"),
            *("--out", str(tmp_path / "out"), "--no-progress"),
        ],
    )
    assert result.exit_code == 0, result.output
    (run_dir,) = list((tmp_path / "out").iterdir())
    assert read_run(run_dir).config.async_memory
    assert "stale reads 0/3" in result.output  # fake writes nothing: no read can be stale


@pytest.mark.parametrize("think", ["-1", "true", "'2'"])
def test_think_time_must_be_a_non_negative_number(tmp_path: Path, think: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(SCENARIO.format(think=think), encoding="utf-8")
    result = CliRunner().invoke(app, ["scenarios", "validate", str(path)])
    assert result.exit_code == 2
    assert "think_time_s" in result.output
