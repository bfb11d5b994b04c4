"""The CSV tables and the per-scenario summary line, from a graded sample run."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pandas as pd

from memeval.rundir.saved import SavedRun
from memeval.summary import summary_line
from memeval.tables import write_tables
from tests.memeval.rundirs import build_sample_run, grade_and_save


def test_tables_are_written_and_say_what_happened(tmp_path: Path) -> None:
    run_dir = build_sample_run(tmp_path / "run")
    results = asyncio.run(grade_and_save(run_dir))
    paths = write_tables(SavedRun.open(run_dir), results)
    assert sorted(p.name for p in paths) == [
        "facts.csv",
        "llm_calls.csv",
        "questions.csv",
        "turns.csv",
    ]
    turns = pd.read_csv(run_dir / "turns.csv")
    assert len(turns) == 8
    row = turns.set_index("turn").loc["s2t3"]
    assert row["update_status"] == "dropped-over-cap"
    assert turns.set_index("turn").loc["s2t2", "compaction"]

    questions = pd.read_csv(run_dir / "questions.csv").set_index("turn")
    assert questions.loc["s3q1", "verdict"] == "pass"
    assert questions.loc["s3q2", "verdict"] == "fail"
    assert "must_not_call:run_experiment" in questions.loc["s3q2", "failed_checks"]

    facts = pd.read_csv(run_dir / "facts.csv").set_index("fact")
    assert facts.loc["seventy-rows", "losses"] == "s2t1: op 0 (replace)"
    assert facts.loc["style", "losses"] == "s2t2: compaction"
    assert facts.loc["seventy-rows", "turns_absent_while_expected"] == 5

    calls = pd.read_csv(run_dir / "llm_calls.csv")
    assert set(calls["role"]) == {"summarizer", "updater", "compactor", "agent"}
    assert len(calls) == 14


def test_the_summary_line_reads_like_the_issue_asks(tmp_path: Path) -> None:
    results = asyncio.run(grade_and_save(build_sample_run(tmp_path / "run")))
    line = summary_line(results.metrics[0])
    assert line == (
        "write-match 6/8 · memory-dependent 1/1 · memory-corruptible 0/1 · compactions 1 "
        "(reached target 1) · dropped writes 1 · model calls/turn 1.8 · tokens/turn 1,405 · "
        "pipeline p50/p95 1.5/1.5 s (with compaction 6.0/6.0 s)"
    )
