"""`memeval run --memory a,b,c`: the same scenarios through several memory systems, side by side.

One run directory holds one complete run per system, `<dir>/<system>/` (run.json, events,
snapshots, verdicts, report.html: grade, gate, compare and report work on each exactly as on
any run), and at its top:
- comparison.json: which systems, in which sub-directories, from which command;
- comparison.csv: one row per (scenario, system) with quality, stored-not-served, model
  calls, tokens, update latency and read-path size;
- report.html: the comparison page (memeval.report.comparison).
Systems run one after another on the same models, so their figures are measured alike.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean

from rich.table import Table

from memeval.errors import ConfigError, RunDirError
from memeval.finish import Finished
from memeval.grading.served import question_reach
from memeval.report.comparison import CHARS_PER_TOKEN, ComparisonView, QuestionRow, SystemRow
from memeval.rundir.comparison import (
    ComparisonInfo,
    SystemRun,
    read_comparison,
    write_comparison,
)
from memeval.rundir.create import new_run_id, safe_name, utc_now
from memeval.rundir.reach import QuestionReach
from memeval.rundir.saved import SavedRun
from memeval.runner import RunOptions

COMPARISON_CSV = "comparison.csv"


def parse_systems(spec: str) -> list[str]:
    """`file,retrieval` -> ["file", "retrieval"]; an empty item or a repeat is bad input."""
    systems = [part.strip() for part in spec.split(",")]
    if any(not s for s in systems):
        raise ConfigError(f"--memory {spec!r} has an empty item (write e.g. file,retrieval)")
    repeated = sorted({s for s in systems if systems.count(s) > 1})
    if repeated:
        raise ConfigError(f"--memory names {repeated[0]!r} twice; name each system once")
    return systems


def new_comparison(
    out: Path, scenarios: list[str], systems: list[str], argv: list[str]
) -> tuple[Path, ComparisonInfo]:
    """Create the comparison directory and its comparison.json (no system has run yet)."""
    run_id = new_run_id(scenarios, "+".join(systems))
    path = Path(out) / run_id
    path.mkdir(parents=True, exist_ok=False)
    info = ComparisonInfo(
        run_id=run_id,
        created_at=utc_now(),
        argv=argv,
        scenarios=scenarios,
        systems=[SystemRun(system=s, directory=safe_name(s, 40)) for s in systems],
    )
    if len({s.directory for s in info.systems}) != len(info.systems):
        raise ConfigError(f"--memory {','.join(systems)}: two systems map to one directory name")
    write_comparison(path, info)
    return path, info


def build_comparison(path: Path) -> ComparisonView:
    """Read every system's graded run under the comparison directory."""
    info = read_comparison(path)
    rows: list[SystemRow] = []
    reach: dict[str, list[QuestionReach]] = {}
    order: list[tuple[str, str, str]] = []
    missing: list[str] = []
    for entry in info.systems:
        sub = Path(path) / entry.directory
        try:
            run = SavedRun.open(sub)
            results = run.graded()
        except RunDirError:
            missing.append(entry.system)
            continue
        every = question_reach(run, results)
        reached = [r for r in every if r.repeat == 0]
        reach[entry.system] = reached
        for r in reached:
            if (r.scenario, r.turn, r.question_type) not in order:
                order.append((r.scenario, r.turn, r.question_type))
        for metrics in results.metrics:
            mine = [r for r in every if r.scenario == metrics.scenario]
            rows.append(
                SystemRow(
                    scenario=metrics.scenario,
                    system=entry.system,
                    directory=entry.directory,
                    metrics=metrics.model_copy(update={"system": entry.system}),
                    questions=len(mine),
                    failed_questions=sum(r.failed for r in mine),
                    stored_not_served=sum(r.stored_not_served for r in mine),
                    not_stored=sum(r.failed and r.reach == "not stored" for r in mine),
                    read_tokens=_read_tokens(run, metrics.scenario),
                    settings=dict(run.info.memory_settings),
                    cached_calls=_cached_calls(run),
                )
            )
    rows.sort(
        key=lambda r: info.scenarios.index(r.scenario) if r.scenario in info.scenarios else 99
    )
    questions = [
        QuestionRow(
            scenario=scenario,
            turn=turn,
            question_type=kind,
            by_system={
                system: next((r for r in found if (r.scenario, r.turn) == (scenario, turn)), None)
                for system, found in reach.items()
            },
        )
        for scenario, turn, kind in order
    ]
    return ComparisonView(
        path=Path(path), info=info, rows=rows, questions=questions, missing=missing
    )


def _cached_calls(run: SavedRun) -> tuple[int, int]:
    cache = run.info.fingerprint.cache if run.info.fingerprint is not None else None
    return (cache.hits, cache.calls) if cache is not None else (0, 0)


def _read_tokens(run: SavedRun, scenario: str) -> float | None:
    sizes = [
        len(r.memory_context or "") / CHARS_PER_TOKEN
        for r in run.events
        if r.scenario == scenario and r.session_kind == "eval"
    ]
    return fmean(sizes) if sizes else None


CSV_COLUMNS = [
    "scenario",
    "system",
    "write_match",
    "memory_dependent",
    "memory_corruptible",
    "questions_failed",
    "stored_not_served",
    "not_stored",
    "compactions",
    "model_calls_per_turn",
    "tokens_per_turn",
    "update_p50_s",
    "update_p95_s",
    "read_tokens_per_request",
    "run_dir",
]


def comparison_csv(view: ComparisonView) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in view.rows:
        m = row.metrics
        writer.writerow(
            [
                row.scenario,
                row.system,
                str(m.write_match),
                str(m.memory_dependent),
                str(m.memory_corruptible),
                row.failed_questions,
                row.stored_not_served,
                row.not_stored,
                m.compactions,
                f"{m.model_calls_per_turn:.2f}",
                f"{m.tokens_per_turn:.0f}",
                _fmt(m.pipeline_latency.p50_s),
                _fmt(m.pipeline_latency.p95_s),
                _fmt(row.read_tokens, 0),
                row.directory,
            ]
        )
    return buffer.getvalue()


def _fmt(value: float | None, digits: int = 2) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def publish_comparison(path: Path) -> tuple[ComparisonView, Path]:
    """Write comparison.csv and the comparison page; return the view and the page's path."""
    from memeval.report.comparison import render_comparison

    view = build_comparison(path)
    (Path(path) / COMPARISON_CSV).write_text(comparison_csv(view), encoding="utf-8")
    return view, render_comparison(view)


def exit_code(finished: dict[str, Finished]) -> int:
    """The worst of the systems' exit codes (4 unhealthy over 1 regression over 0)."""
    codes = [f.exit_code for f in finished.values()]
    return 4 if 4 in codes else max(codes, default=0)


@dataclass
class ComparisonOutcome:
    path: Path
    finished: dict[str, Finished]  # system -> its finished run
    view: ComparisonView
    page: Path


def run_comparison(
    options: RunOptions,
    *,
    judge: bool = True,
    judge_writes: bool = False,
    judge_strategy: str | None = None,
) -> ComparisonOutcome:
    """Run (or, with `options.resume` naming a comparison directory, continue) every system on
    the scenarios, one after another; grade and report each, then the comparison."""
    import asyncio
    from dataclasses import replace

    from memeval.finish import finish_run
    from memeval.rundir.record import read_run
    from memeval.runner import run, updater_name
    from memeval.scenario.loader import resolve
    from memeval.systems.factory import check_memory_spec

    if options.resume is not None:
        path, info = Path(options.resume), read_comparison(options.resume)
    else:
        systems = parse_systems(options.memory)
        for system in systems:
            check_memory_spec(system, updater_name(options))
        names = [resolve(target).name for target in options.targets]  # bad input fails first
        path, info = new_comparison(options.out, names, systems, options.argv)
        info.targets = list(options.targets)
        write_comparison(path, info)
    finished: dict[str, Finished] = {}
    for entry in info.systems:
        sub = path / entry.directory
        if not (sub / "run.json").is_file():
            run(
                replace(
                    options,
                    targets=list(info.targets),
                    memory=entry.system,
                    out=path,
                    run_id=entry.directory,
                    resume=None,
                )
            )
        elif read_run(sub).status != "complete":
            run(replace(options, memory=entry.system, resume=sub))
        done = asyncio.run(
            finish_run(
                sub,
                judge=judge,
                judge_writes=judge_writes,
                progress=options.progress,
                judge_strategy=judge_strategy,
            )
        )
        entry.exit_code = done.exit_code
        write_comparison(path, info)
        finished[entry.system] = done
    view, page = publish_comparison(path)
    return ComparisonOutcome(path=path, finished=finished, view=view, page=page)


def comparison_table(view: ComparisonView) -> Table:
    """One row per (scenario, system), for the terminal."""
    table = Table(title=f"comparison {view.info.run_id}")
    for column in ("scenario", "system"):
        table.add_column(column, no_wrap=True)
    columns = ["write", "mem-dep", "mem-corr", "stored, not served", "calls/turn"]
    columns += ["tokens/turn", "update p50/p95", "read tok/req"]
    for column in columns:
        table.add_column(column, justify="right")
    for row in view.rows:
        m = row.metrics
        p50, p95 = m.pipeline_latency.p50_s, m.pipeline_latency.p95_s
        table.add_row(
            row.scenario,
            row.system,
            str(m.write_match),
            str(m.memory_dependent),
            str(m.memory_corruptible),
            f"{row.stored_not_served}/{row.failed_questions}",
            f"{m.model_calls_per_turn:.1f}",
            f"{m.tokens_per_turn:,.0f}",
            "–"
            if p50 is None or p95 is None
            else f"{p50:.1f}/{p95:.1f} s" + (" (cached)" if row.latency_replayed else ""),
            "–" if row.read_tokens is None else f"{row.read_tokens:,.0f}",
        )
    return table
