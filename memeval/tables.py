"""The run as pandas tables: turns, questions, facts, llm_calls -> CSV.

Built from the saved run only: the turn records in events.jsonl and the graded verdicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from memeval.rundir.record import TurnRecord
from memeval.rundir.results import RunResults, Verdict
from memeval.rundir.saved import SavedRun
from memeval.rundir.staleness import Freshness, TurnKey, run_freshness

TABLES = ("turns", "questions", "facts", "llm_calls")


def _v(verdict: Verdict | None) -> tuple[str | None, str | None]:
    return (verdict.verdict, verdict.source) if verdict is not None else (None, None)


def turns_table(
    records: list[TurnRecord],
    results: RunResults,
    freshness: Mapping[TurnKey, Freshness] | None = None,
) -> pd.DataFrame:
    """One row per turn. `stale_read` is empty for turns that read no memory; `pending_at_read`
    and `lag_s` are filled under --async-memory."""
    verdicts = {(t.scenario, t.repeat, t.turn): t for t in results.turns}
    rows = []
    for r in records:
        fresh = (freshness or {}).get((r.scenario, r.repeat, r.turn))
        update = r.update
        t = verdicts.get((r.scenario, r.repeat, r.turn))
        write, write_source = _v(t.write if t else None)
        question, question_source = _v(t.question if t else None)
        calls = r.model_calls()
        rows.append(
            {
                "scenario": r.scenario,
                "repeat": r.repeat,
                "index": r.index,
                "session": r.session,
                "kind": r.session_kind,
                "turn": r.turn,
                "update_status": update.status,
                "ops": len(update.ops),
                "attempts": len(update.attempts),
                "blocked_ops": len(update.blocked),
                "compaction": update.compaction is not None,
                "compaction_reached_target": bool(
                    update.compaction and update.compaction.reached_target
                ),
                "file_chars": r.file_chars,
                "write": write,
                "write_source": write_source,
                "write_evidence": " | ".join(t.write.evidence) if t and t.write else "",
                "question": question,
                "question_source": question_source,
                "final": t.final.verdict if t else None,
                "model_calls": len(calls),
                "tokens": sum(c.tokens for c in calls),
                "agent_s": r.timings.get("agent_s"),
                "pipeline_s": r.pipeline_seconds(),
                "turn_s": r.timings.get("turn_s"),
                "lag_s": r.timings.get("lag_s"),
                "pending_at_read": " ".join(r.pending_at_read),
                "stale_read": fresh.stale if fresh is not None and fresh.read else None,
                "agent_error": r.agent_error,
            }
        )
    return pd.DataFrame(rows)


def questions_table(records: list[TurnRecord], results: RunResults) -> pd.DataFrame:
    by_key = {(r.scenario, r.repeat, r.turn): r for r in records}
    rows = []
    for t in results.turns:
        if t.question is None:
            continue
        r = by_key.get((t.scenario, t.repeat, t.turn))
        q = r.question if r else None
        rows.append(
            {
                "scenario": t.scenario,
                "repeat": t.repeat,
                "turn": t.turn,
                "type": t.question_type,
                "tags": " ".join(t.question_tags),
                "criterion": q.criterion if q else None,
                "answer": r.answer if r else None,
                "tool_calls": " ".join(c.name for c in r.tool_calls) if r else "",
                "checks": t.question_check.verdict if t.question_check else None,
                "failed_checks": " | ".join(
                    f"{c.name}: {c.evidence}" for c in t.question_checks if not c.passed
                ),
                "judge": t.judge.verdict if t.judge else None,
                "judge_reason": (t.judge.reason or t.judge.error) if t.judge else None,
                "human": t.human.verdict if t.human else None,
                "human_note": t.human.note if t.human else None,
                "verdict": t.question.verdict,
                "not_attempted": t.question.not_attempted,
                "source": t.question.source,
                "answer_f1": t.answer_f1,
            }
        )
    return pd.DataFrame(rows)


def facts_table(results: RunResults) -> pd.DataFrame:
    rows = []
    for f in results.facts:
        losses = [
            f"{loss.turn}: {loss.culprit.kind}"
            + (
                f" {loss.culprit.op_index} ({(loss.culprit.op or {}).get('op', '?')})"
                if loss.culprit.kind == "op"
                else ""
            )
            for loss in f.losses
        ]
        rows.append(
            {
                "scenario": f.scenario,
                "repeat": f.repeat,
                "fact": f.fact,
                "expected_from": f.expected_from,
                "first_present": f.first_present,
                "absent_while_expected": " ".join(f.absent_while_expected),
                "turns_absent_while_expected": len(f.absent_while_expected),
                "losses": " | ".join(losses),
                "cells": " ".join(f.cells),
            }
        )
    return pd.DataFrame(rows)


def llm_calls_table(records: list[TurnRecord], results: RunResults) -> pd.DataFrame:
    """One row per model call, the judge's included (source "judge")."""
    rows = []
    for r in records:
        for c in r.model_calls():
            rows.append(
                {"scenario": r.scenario, "repeat": r.repeat, "turn": r.turn, **c.model_dump()}
            )
    for t in results.turns:
        for judge in (t.judge, t.write_judge):
            if judge is None:
                continue
            rows.append(
                {
                    "scenario": t.scenario,
                    "repeat": t.repeat,
                    "turn": t.turn,
                    "role": "judge",
                    "model": judge.model,
                    "prompt_tokens": judge.prompt_tokens,
                    "completion_tokens": judge.completion_tokens,
                    "latency_s": judge.latency_s,
                    "cached": judge.cached,
                    "error": judge.error,
                }
            )
    return pd.DataFrame(rows)


def build_tables(run: SavedRun, results: RunResults) -> dict[str, pd.DataFrame]:
    records = run.events
    return {
        "turns": turns_table(records, results, run_freshness(run)),
        "questions": questions_table(records, results),
        "facts": facts_table(results),
        "llm_calls": llm_calls_table(records, results),
    }


def write_tables(run: SavedRun, results: RunResults) -> list[Path]:
    """Write turns.csv, questions.csv, facts.csv and llm_calls.csv into the run directory."""
    paths = []
    for name, frame in build_tables(run, results).items():
        path = run.path / f"{name}.csv"
        frame.to_csv(path, index=False)
        paths.append(path)
    return paths
