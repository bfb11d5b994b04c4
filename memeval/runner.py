"""`memeval run`: plan the scenario repeats, run them (concurrently when asked), journal every
turn into reports/<run-id>/, and resume an interrupted run where it stopped."""

from __future__ import annotations

import asyncio
import shutil
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memeval.agent import Agent, ChatAgent
from memeval.control_agent import ControlAgent, control_kind, is_control_spec
from memeval.errors import ConfigError, RunDirError
from memeval.models.accounting import TurnCalls
from memeval.models.base import ChatModel
from memeval.models.pool import ModelPool, cache_path, memory_models
from memeval.models.registry import build_model, describe
from memeval.models.spec import ModelSpec, parse_spec, resolve_specs
from memeval.plugins import load_attr
from memeval.progress import RunProgress
from memeval.replay import Unit, replay
from memeval.rundir.create import new_run_id, prompt_hashes, sha256_file, utc_now, versions
from memeval.rundir.fingerprint import cache_use, make_fingerprint
from memeval.rundir.record import (
    PhoenixTarget,
    RunConfig,
    RunInfo,
    ShardInfo,
    TurnRecord,
    UnitRef,
    read_events,
    read_run,
    turn_from_record,
    write_run,
)
from memeval.rundir.shard import Shard, shard_units
from memeval.scenario.loader import resolve
from memeval.scenario.schema import ResolvedScenario
from memeval.strategy_defaults import NO_DEADLINE, choose_strategies
from memeval.systems.base import Closeable, Describable, MemoryKey, MemorySystem, Restorable
from memeval.systems.factory import (
    LEARNING,
    SystemEnv,
    build_system,
    check_memory_spec,
    memory_key,
)
from memeval.systems.traced import TracedMemorySystem
from memeval.tracing.spans import Tracing, setup_tracing
from reference_memory import SKELETON
from reference_memory.strategies import compactor_by_name, safety_by_name, updater_by_name


@dataclass
class RunOptions:
    targets: list[str] = field(default_factory=list)
    memory: str = "file"
    model: ModelSpec | None = None  # every role
    role_models: dict[str, ModelSpec | None] = field(default_factory=dict)
    agent: str | None = None
    repeat: int = 1
    concurrency: int = 1
    out: Path = Path("reports")
    resume: Path | None = None
    cache: bool = True
    store: str | None = None
    phoenix: str | None = None
    project: str | None = None
    chat_models: dict[str, ChatModel] = field(
        default_factory=dict
    )  # role -> instance (library use)
    updater: str | None = None  # updater strategy name (default: chosen per model)
    safety: str | None = None  # safety strategy name (default: chosen per model)
    compactor: str | None = None  # compactor strategy name (default: chosen per model)
    argv: list[str] = field(default_factory=list)
    progress: bool = True
    async_memory: bool = False  # the next turn starts while the previous update runs
    shard: Shard | None = None  # play only this slice of the planned units
    run_id: str | None = None  # the run directory's name under `out` (default: a new id)


@dataclass
class RunOutcome:
    run_dir: Path
    info: RunInfo


def prepare(options: RunOptions) -> tuple[Path, RunInfo, list[ResolvedScenario]]:
    """Create (or reopen, for --resume) the run directory and its run.json."""
    if options.resume is not None:
        run_dir = options.resume
        info = read_run(run_dir)
        if info.status == "complete":
            raise RunDirError(f"{run_dir}: run is already complete; nothing to resume")
        return run_dir, info, list(info.scenarios.values())
    if not options.targets:
        raise ConfigError("name at least one scenario (see `memeval scenarios list`)")
    if options.repeat < 1 or options.concurrency < 1:
        raise ConfigError("--repeat and --concurrency must be at least 1")
    scenarios = [resolve(target) for target in options.targets]
    names = [s.name for s in scenarios]
    if len(set(names)) != len(names):
        raise ConfigError(f"scenario named twice: {', '.join(names)}")
    roles = needed_roles(options.memory, options.agent)
    given = options.chat_models
    specs = {
        role: spec
        for role, spec in resolve_specs(options.model, options.role_models).items()
        if role not in given
    }
    strategies = choose_strategies(specs, options.updater, options.safety, options.compactor)
    check_memory_spec(options.memory, updater_name(options))
    for role in roles:  # a missing key or weights package fails now, before anything is written
        if role not in given:
            build_model(specs[role])
    if is_control_spec(options.agent):
        control_kind(options.agent or "")
    elif options.agent:
        load_attr(options.agent, "--agent")
    run_id = options.run_id or new_run_id(names, options.memory)
    planned = [UnitRef(scenario=s.name, repeat=k) for s in scenarios for k in range(options.repeat)]
    units, shard = planned, None
    if options.shard is not None:
        units = shard_units(planned, options.shard)
        shard = ShardInfo(index=options.shard.index, count=options.shard.count, planned=planned)
        run_id += f"-shard{options.shard.index}of{options.shard.count}"
    run_dir = options.out / run_id
    run_dir.mkdir(parents=True, exist_ok=False)
    info = RunInfo(
        run_id=run_id,
        created_at=utc_now(),
        argv=options.argv,
        memory=options.memory,
        config=RunConfig(
            repeat=options.repeat,
            concurrency=options.concurrency,
            cache=options.cache,
            store="postgresql" if options.store else "sqlite",
            agent=options.agent or "chat",
            roles=roles,
            async_memory=options.async_memory,
        ),
        models={role: given[role].name if role in given else str(specs[role]) for role in roles},
        strategies=strategies if "updater" in roles else {},
        model_info={
            role: {"backend": "given", "name": given[role].name}
            if role in given
            else describe(specs[role])
            for role in roles
        },
        versions=versions(),
        prompt_hashes=prompt_hashes(),
        scenario_hashes=_scenario_hashes(scenarios),
        scenarios={s.name: s for s in scenarios},
        units=units,
        shard=shard,
    )
    info.fingerprint = make_fingerprint(
        scenario_files={s.name: s.files or [s.path] for s in scenarios},
        model_info=info.model_info,
        settings=_result_settings(info),
    )
    write_run(run_dir, info)
    return run_dir, info, scenarios


def updater_name(options: RunOptions) -> str:
    """The updater role's model as the run will name it (a given model's own name)."""
    if "updater" in options.chat_models:
        return options.chat_models["updater"].name
    return str(resolve_specs(options.model, options.role_models)["updater"])


def _result_settings(info: RunInfo) -> dict[str, str]:
    """The run options that shape its results, for the fingerprint."""
    settings = {"memory": info.memory, "agent": info.config.agent, "store": info.config.store}
    if info.config.async_memory:  # a turn may read memory before the last update landed
        settings["memory updates"] = "async"
    return settings | {f"{name} strategy": value for name, value in info.strategies.items()}


def needed_roles(memory: str, agent: str | None = None) -> list[str]:
    """The model roles a run uses: the control agent calls no model."""
    roles = [] if is_control_spec(agent) else ["agent"]
    if memory in LEARNING or ":" in memory:
        roles += ["summarizer", "updater", "safety", "compactor"]
    return [*roles, "judge"]


async def execute(options: RunOptions) -> RunOutcome:
    run_dir, info, scenarios = prepare(options)
    config = info.config
    concurrency = options.concurrency or config.concurrency
    by_name = {scenario.name: scenario for scenario in scenarios}
    specs = {  # the saved run's specs (a resumed run is read back from run.json)
        role: parse_spec(spec)
        for role, spec in info.models.items()
        if role not in options.chat_models
    }
    pool = ModelPool(specs, cache_path() if config.cache else None, given=options.chat_models)
    tracing = setup_tracing(options.phoenix, options.project or f"memeval-{info.run_id}")
    if tracing.enabled:
        info.phoenix = PhoenixTarget(url=tracing.url, project=tracing.project)
    done = _completed(run_dir)
    info.status, info.finished_at = "running", None
    write_run(run_dir, info)
    limit = asyncio.Semaphore(concurrency)
    try:
        with RunProgress(enabled=options.progress) as progress, tracing.run(info.run_id):
            units = []
            for ref in info.units:  # this run directory's units (a shard's slice of the plan)
                scenario, k = by_name[ref.scenario], ref.repeat
                name = f"{scenario.name} r{k}" if config.repeat > 1 else scenario.name
                records = done.get((scenario.name, k), [])
                total = len(scenario.turn_ids())
                progress.add_unit(name, total, len(records))
                units.append(
                    _run_unit(
                        run_dir,
                        info,
                        options,
                        scenario,
                        k,
                        records,
                        pool,
                        tracing,
                        limit,
                        lambda s, t, c, n=name: progress.turn_done(n, s, t, c),
                    )
                )
            results = await asyncio.gather(*units, return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            first = errors[0]
            info.status, info.error = "failed", f"{type(first).__name__}: {first}"
            raise first
        info.status = "complete"
    except (KeyboardInterrupt, asyncio.CancelledError):
        info.status = "interrupted"
        raise
    finally:
        info.finished_at = utc_now()
        for role, learned in pool.capabilities().items():
            info.model_info.setdefault(role, {})["capabilities"] = learned
        if info.fingerprint is not None:
            calls = [c.cached for r in read_events(run_dir) for c in r.model_calls()]
            info.fingerprint.cache = cache_use(calls, enabled=config.cache)
        write_run(run_dir, info)
        pool.close()
        tracing.shutdown()
    return RunOutcome(run_dir=run_dir, info=info)


def run(options: RunOptions) -> RunOutcome:
    return asyncio.run(execute(options))


async def _run_unit(
    run_dir: Path,
    info: RunInfo,
    options: RunOptions,
    scenario: ResolvedScenario,
    repeat: int,
    done: list[TurnRecord],
    pool: ModelPool,
    tracing: Tracing,
    limit: asyncio.Semaphore,
    on_turn: Any,
) -> None:
    if len(done) == len(scenario.turn_ids()):
        return
    async with limit:
        sink = TurnCalls()
        roles = [r for r in info.models if r != "judge"]
        chat = pool.for_unit(roles, repeat, sink, tracing)
        workdir = run_dir / "stores" / f"{scenario.name}-r{repeat}"
        if not done and workdir.exists():
            shutil.rmtree(workdir)  # a unit that never completed a turn starts from scratch
        env = SystemEnv(
            memory_models=memory_models(chat) if "updater" in chat else {},
            chat_models=chat,
            workdir=workdir,
            scenario=scenario,
            store=options.store,
            namespace=f"{info.run_id}/r{repeat}",
            options=strategy_objects(info.strategies),
            calls=sink,
            tracing=tracing,
        )
        system: MemorySystem = build_system(info.memory, env)
        if isinstance(system, Describable):
            info.memory_settings = {name: value for name, value in system.settings().items()}
        key = memory_key(scenario, env)
        await _restore(system, key, run_dir, done)
        unit = Unit(
            scenario=scenario,
            repeat=repeat,
            system=TracedMemorySystem(system, tracing),
            agent=_build_agent(info.config.agent, chat.get("agent"), scenario, repeat),
            key=key,
            calls=sink,
            tracing=tracing,
            done=done,
            total_calls=sum(len(r.calls) for r in done),
            async_memory=info.config.async_memory,
        )
        try:
            await replay(unit, run_dir, on_turn)
        finally:
            if isinstance(system, Closeable):
                system.close()


async def _restore(
    system: MemorySystem, key: MemoryKey, run_dir: Path, done: list[TurnRecord]
) -> None:
    """Bring a resumed unit's memory back to its last complete turn."""
    if not isinstance(system, Restorable):
        return
    if done:
        path = run_dir / done[-1].snapshot
        text = path.read_text("utf-8") if path.is_file() else ""
        await system.restore(key, text, [(r.session, turn_from_record(r)) for r in done])
    elif system.name == "file":
        await system.restore(key, SKELETON, [])


def strategy_objects(strategies: dict[str, str]) -> dict[str, Any]:
    """FileMemory keyword arguments for the strategies named in run.json (with the updater's
    output bound and the per-call deadline when one was set)."""
    objects: dict[str, Any] = {}
    if "updater" in strategies:
        objects["updater"] = updater_by_name(strategies["updater"])
    if "safety" in strategies:
        objects["safety"] = safety_by_name(strategies["safety"])
    if "compactor" in strategies:
        objects["compactor"] = compactor_by_name(strategies["compactor"])
    if "updater_max_tokens" in strategies:
        objects["max_tokens"] = {"updater": int(strategies["updater_max_tokens"])}
    if "call_timeout_s" in strategies:
        given = strategies["call_timeout_s"]
        objects["call_timeout_s"] = None if given == NO_DEADLINE else float(given)
    return objects


def _build_agent(
    spec: str, model: ChatModel | None, scenario: ResolvedScenario, repeat: int
) -> Agent:
    if is_control_spec(spec):
        return ControlAgent(scenario, control_kind(spec), repeat)
    if model is None:
        raise ConfigError(f"--agent {spec!r} needs the agent model, which run.json lacks")
    if spec == "chat":
        return ChatAgent(model)
    target = load_attr(spec, "--agent")
    agent = target(model) if callable(target) and not isinstance(target, Agent) else target
    if not isinstance(agent, Agent):
        raise ConfigError(f"--agent {spec!r} did not give an agent (needs async respond())")
    return agent


def _completed(run_dir: Path) -> dict[tuple[str, int], list[TurnRecord]]:
    grouped: dict[tuple[str, int], list[TurnRecord]] = defaultdict(list)
    for record in read_events(run_dir):
        grouped[(record.scenario, record.repeat)].append(record)
    for records in grouped.values():
        records.sort(key=lambda r: r.index)
    return grouped


def _scenario_hashes(scenarios: list[ResolvedScenario]) -> dict[str, str]:
    """sha256 of every file each scenario was read from (includes too)."""
    hashes: dict[str, str] = {}
    for scenario in scenarios:
        for name in scenario.files or [scenario.path]:
            if name:
                hashes[name] = sha256_file(Path(name))
    return hashes
