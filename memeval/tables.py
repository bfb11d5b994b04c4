"""The run as pandas tables (turns, questions, facts, llm_calls -> CSV) and per-scenario summaries.

Built from the saved run only: the turn records in events.jsonl and the graded verdicts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from rich.table import Table

from memeval.rundir.record import TurnRecord, read_events
from memeval.rundir.results import Latency, RunResults, ScenarioMetrics, Verdict

TABLES = ("turns", "questions", "facts", "llm_calls")


def turn_call_records(record: TurnRecord) -> list[dict[str, Any]]:
    """Every model call of the turn. `TurnRecord.calls` covers all roles; a writer that only
    filled the update report's calls is read from there instead."""
    return list(record.calls or (record.update or {}).get("calls") or [])


def pipeline_seconds(record: TurnRecord) -> float | None:
    """How long the memory update after this turn took."""
    if "update_s" in record.timings:
        return float(record.timings["update_s"])
    total = ((record.update or {}).get("timings") or {}).get("total")
    return float(total) if total is not None else None


def _v(verdict: Verdict | None) -> tuple[str | None, str | None]:
    return (verdict.verdict, verdict.source) if verdict is not None else (None, None)


def turns_table(records: list[TurnRecord], results: RunResults) -> pd.DataFrame:
    verdicts = {(t.scenario, t.repeat, t.turn): t for t in results.turns}
    rows = []
    for r in records:
        update = r.update or {}
        t = verdicts.get((r.scenario, r.repeat, r.turn))
        write, write_source = _v(t.write if t else None)
        question, question_source = _v(t.question if t else None)
        compaction = update.get("compaction") or {}
        calls = turn_call_records(r)
        rows.append(
            {
                "scenario": r.scenario,
                "repeat": r.repeat,
                "index": r.index,
                "session": r.session,
                "kind": r.session_kind,
                "turn": r.turn,
                "update_status": update.get("status"),
                "ops": len(update.get("ops") or []),
                "attempts": len(update.get("attempts") or []),
                "blocked_ops": len(update.get("blocked") or []),
                "compaction": bool(compaction),
                "compaction_reached_target": bool(compaction.get("reached_target")),
                "file_chars": r.file_chars,
                "write": write,
                "write_source": write_source,
                "write_evidence": " | ".join(t.write.evidence) if t and t.write else "",
                "question": question,
                "question_source": question_source,
                "final": t.final.verdict if t else None,
                "model_calls": len(calls),
                "tokens": sum(_tokens(c) for c in calls),
                "agent_s": r.timings.get("agent_s"),
                "pipeline_s": pipeline_seconds(r),
                "turn_s": r.timings.get("turn_s"),
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
        q = (r.question if r else None) or {}
        rows.append(
            {
                "scenario": t.scenario,
                "repeat": t.repeat,
                "turn": t.turn,
                "type": t.question_type,
                "criterion": q.get("criterion"),
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
                "source": t.question.source,
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
        for c in turn_call_records(r):
            rows.append({"scenario": r.scenario, "repeat": r.repeat, "turn": r.turn, **c})
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
                    "error": judge.error,
                }
            )
    return pd.DataFrame(rows)


def build_tables(run_dir: Path, results: RunResults) -> dict[str, pd.DataFrame]:
    records = read_events(Path(run_dir))
    return {
        "turns": turns_table(records, results),
        "questions": questions_table(records, results),
        "facts": facts_table(results),
        "llm_calls": llm_calls_table(records, results),
    }


def write_tables(run_dir: Path, results: RunResults) -> list[Path]:
    """Write turns.csv, questions.csv, facts.csv and llm_calls.csv into the run directory."""
    paths = []
    for name, frame in build_tables(run_dir, results).items():
        path = Path(run_dir) / f"{name}.csv"
        frame.to_csv(path, index=False)
        paths.append(path)
    return paths


def summary_line(m: ScenarioMetrics) -> str:
    """write-match 44/48 · memory-dependent 16/18 · ... · pipeline p50/p95 1.2/3.4 s (...)."""
    parts = [
        f"write-match {m.write_match}",
        f"memory-dependent {m.memory_dependent}",
        f"memory-corruptible {m.memory_corruptible}",
        f"compactions {m.compactions} (reached target {m.compactions_reached_target})",
        f"dropped writes {m.dropped_writes}",
        f"model calls/turn {m.model_calls_per_turn:.1f}",
        f"tokens/turn {m.tokens_per_turn:,.0f}",
        f"pipeline p50/p95 {_latency(m.pipeline_latency)}"
        f" (with compaction {_latency(m.pipeline_latency_compaction)})",
    ]
    if m.questions_error:
        parts.insert(3, f"question errors {m.questions_error}")
    if m.questions_ungraded:
        parts.insert(3, f"ungraded questions {m.questions_ungraded}")
    if m.judge_human_agreement is not None:
        parts.append(f"judge-human agreement {m.judge_human_agreement}")
    return " · ".join(parts)


def summary_table(results: RunResults) -> Table:
    """The per-scenario summary as a rich table for the terminal."""
    table = Table(title=f"run {results.run_id}")
    table.add_column("scenario", no_wrap=True)
    columns = ["repeats", "write", "mem-dep", "mem-corr", "compact (target)", "dropped"]
    columns += ["calls/turn", "tokens/turn", "p50/p95", "p50/p95 compact"]
    for column in columns:
        table.add_column(column, justify="right")
    for m in results.metrics:
        table.add_row(
            m.scenario,
            str(m.repeats),
            str(m.write_match),
            str(m.memory_dependent),
            str(m.memory_corruptible),
            f"{m.compactions} ({m.compactions_reached_target})",
            str(m.dropped_writes),
            f"{m.model_calls_per_turn:.1f}",
            f"{m.tokens_per_turn:,.0f}",
            _latency(m.pipeline_latency),
            _latency(m.pipeline_latency_compaction),
        )
    return table


def _latency(lat: Latency) -> str:
    if lat.p50_s is None or lat.p95_s is None:
        return "–"
    return f"{lat.p50_s:.1f}/{lat.p95_s:.1f} s"


def _tokens(call: dict[str, Any]) -> int:
    return int(call.get("prompt_tokens") or 0) + int(call.get("completion_tokens") or 0)
