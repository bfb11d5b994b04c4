"""`memeval run`: replay scenarios through an agent and a memory system, then grade and report."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from memeval.cli.app import app, handle_errors

if TYPE_CHECKING:
    from memeval.runner import RunOptions

ModelOpt = Annotated[str | None, typer.Option(metavar="SPEC", show_default=False)]


@app.command("run")
@handle_errors
def run_command(
    scenarios: Annotated[
        list[str] | None,
        typer.Argument(metavar="SCENARIO_OR_PATH...", help="Bundled scenario names or YAML paths."),
    ] = None,
    memory: Annotated[
        str,
        typer.Option(
            help="file | retrieval | core-search | core-search-inject | none | full-history | "
            "oracle | package.module:factory; a comma list (file,retrieval) runs each side by side"
        ),
    ] = "file",
    model: Annotated[
        str | None,
        typer.Option(metavar="SPEC", help="Every role: openai:MODEL | local:NAME | fake."),
    ] = None,
    model_agent: ModelOpt = None,
    model_summarizer: ModelOpt = None,
    model_updater: ModelOpt = None,
    model_safety: ModelOpt = None,
    model_compactor: ModelOpt = None,
    model_judge: ModelOpt = None,
    agent: Annotated[
        str | None, typer.Option(help="Your own agent as package.module:factory.")
    ] = None,
    updater: Annotated[
        str | None, typer.Option(help="Updater strategy (default: chosen for the model).")
    ] = None,
    safety: Annotated[
        str | None, typer.Option(help="Safety strategy (default: chosen for the model).")
    ] = None,
    compactor: Annotated[
        str | None,
        typer.Option(help="Compactor strategy: rewrite or select (default: chosen for the model)."),
    ] = None,
    repeat: Annotated[int, typer.Option(min=1, help="Independent repetitions.")] = 1,
    concurrency: Annotated[int, typer.Option(min=1, help="Units run at once.")] = 1,
    out: Annotated[Path, typer.Option(help="Where run directories go.")] = Path("reports"),
    store: Annotated[
        str | None, typer.Option(help="postgresql://... for file memory (default: SQLite).")
    ] = None,
    phoenix: Annotated[
        str | None,
        typer.Option(envvar="PHOENIX_COLLECTOR_ENDPOINT", help="Phoenix URL to trace to."),
    ] = None,
    project: Annotated[str | None, typer.Option(help="Phoenix project name.")] = None,
    junit: Annotated[Path | None, typer.Option(help="Write JUnit XML here.")] = None,
    baseline: Annotated[
        Path | None, typer.Option(help="Run dir or metrics JSON; exit 1 on a regression.")
    ] = None,
    resume: Annotated[
        Path | None, typer.Option(help="Continue an interrupted run directory.")
    ] = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Bypass the response cache.")
    ] = False,
    no_judge: Annotated[bool, typer.Option("--no-judge", help="Skip the LLM judge.")] = False,
    judge_strategy: Annotated[
        str | None,
        typer.Option(metavar="NAME", help="Judge strategy: single | clauses (default: per model)."),
    ] = None,
    judge_writes: Annotated[
        bool, typer.Option("--judge-writes", help="Also judge each write against its note.")
    ] = False,
    alpha: Annotated[float, typer.Option(help="Gate: significance of a pass-rate drop.")] = 0.05,
    max_drop: Annotated[float, typer.Option(help="Gate: tolerated pass-rate drop (0..1).")] = 0.0,
    progress: Annotated[bool, typer.Option(help="Show live progress.")] = True,
    async_memory: Annotated[
        bool,
        typer.Option(
            "--async-memory",
            help="Start the next turn as soon as the agent has answered, while the previous "
            "memory update runs (as in production); the report shows stale reads.",
        ),
    ] = False,
    shard: Annotated[
        str | None,
        typer.Option(
            metavar="I/N",
            help="Run only the I-th of N disjoint slices of the units; join with memeval merge.",
        ),
    ] = None,
) -> None:
    """Replay scenarios and write reports/<run-id>/ (run.json, events.jsonl, snapshots/,
    tables, report.html); print a summary table and the report's path.

    Exit codes: 0 done; 1 a regression against --baseline; 2 bad input; 3 internal error;
    4 the memory pipeline failed on most of the run (more than half of the memory updates,
    or of one role's model calls, errored): the scores measure the failures, see the
    warning on stderr."""
    from memeval.finish import finish_run, print_summary, warning_lines
    from memeval.gate import gate_config
    from memeval.models.spec import parse_spec
    from memeval.rundir.comparison import is_comparison
    from memeval.rundir.shard import parse_shard
    from memeval.runner import RunOptions, run

    gate = gate_config(alpha, max_drop)  # bad thresholds fail before the run, not after
    if judge_strategy is not None:
        from memeval.grading.judge_strategies import strategy_for

        strategy_for(judge_strategy)  # an unknown name fails before the run, not after
    role_models = {
        "agent": model_agent,
        "summarizer": model_summarizer,
        "updater": model_updater,
        "safety": model_safety,
        "compactor": model_compactor,
        "judge": model_judge,
    }
    options = RunOptions(
        targets=list(scenarios or []),
        memory=memory,
        model=parse_spec(model) if model else None,
        role_models={role: parse_spec(s) if s else None for role, s in role_models.items()},
        agent=agent,
        updater=updater,
        safety=safety,
        compactor=compactor,
        repeat=repeat,
        concurrency=concurrency,
        out=out,
        resume=resume,
        cache=not no_cache,
        store=store,
        phoenix=phoenix,
        project=project,
        argv=sys.argv[1:],
        progress=progress,
        async_memory=async_memory,
        shard=parse_shard(shard) if shard is not None else None,
    )
    if "," in memory or (resume is not None and is_comparison(resume)):
        _run_comparison(options, no_judge, judge_writes, judge_strategy, shard, baseline, junit)
        return
    outcome = run(options)
    done = asyncio.run(
        finish_run(
            outcome.run_dir,
            judge=not no_judge,
            judge_writes=judge_writes,
            junit=junit,
            baseline=baseline,
            gate=gate,
            progress=progress,
            judge_strategy=judge_strategy,
        )
    )
    print_summary(done)
    if outcome.info.models and all(spec == "fake" for spec in outcome.info.models.values()):
        typer.echo("note: every role ran on `fake`, a stand-in that is not a model")
    sliced = outcome.info.shard
    if sliced is not None:
        typer.echo(
            f"shard {sliced.index}/{sliced.count}: {len(outcome.info.units)} of "
            f"{len(sliced.planned)} units; join every shard with `memeval merge`"
        )
    typer.echo(f"run directory: {outcome.run_dir}")
    typer.echo(f"report: {done.report}")
    if done.junit is not None:
        typer.echo(f"junit: {done.junit}")
    if done.gate is not None and done.gate.regressions:
        names = ", ".join(f"{d.scenario} {d.metric}" for d in done.gate.regressions)
        typer.echo(f"regression: {names}", err=True)
    for line in warning_lines(done):
        typer.echo(line, err=True)
    if done.exit_code:
        raise typer.Exit(done.exit_code)


def _run_comparison(
    options: RunOptions,
    no_judge: bool,
    judge_writes: bool,
    judge_strategy: str | None,
    shard: str | None,
    baseline: Path | None,
    junit: Path | None,
) -> None:
    """`--memory a,b,c`: every system on the same scenarios, then the comparison."""
    from rich.console import Console

    from memeval.comparison import comparison_table, exit_code, run_comparison
    from memeval.errors import ConfigError
    from memeval.finish import warning_lines

    given = [
        name
        for name, value in (("--shard", shard), ("--baseline", baseline), ("--junit", junit))
        if value is not None
    ]
    if given:
        raise ConfigError(
            f"{given[0]} works on one system's run: run the comparison without it, then use "
            "`memeval gate DIR/SYSTEM` (or grade/compare) on each system's directory"
        )
    outcome = run_comparison(
        options, judge=not no_judge, judge_writes=judge_writes, judge_strategy=judge_strategy
    )
    Console(width=max(Console().width, 140)).print(comparison_table(outcome.view))
    for system, done in outcome.finished.items():
        for line in warning_lines(done):
            typer.echo(f"{system}: {line}", err=True)
    if outcome.view.missing:
        typer.echo(f"not graded: {', '.join(outcome.view.missing)}", err=True)
    typer.echo(f"run directory: {outcome.path}")
    typer.echo(f"comparison: {outcome.page}")
    code = exit_code(outcome.finished)
    if code:
        raise typer.Exit(code)
