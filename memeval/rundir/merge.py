"""`memeval merge`: join the run directories of `memeval run --shard I/N` into one run.

The merged directory is what the unsharded run would have written before grading: run.json
with the whole plan, every shard's turns in plan order, their snapshots, and the shards'
verdicts (so grading it again reuses their judgements and calls no model). Grading, tables,
report and gate then run on it as on any run, pooling metrics over all units.

Refused, each with one line: a directory that is not a complete shard, shards of different
configurations (models, prompts, scenarios, versions, options), of different shard counts,
the same shard twice, a missing shard, or an output directory that already has files.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memeval.errors import RunDirError
from memeval.rundir.create import new_run_id, utc_now
from memeval.rundir.fingerprint import CacheUse, Fingerprint
from memeval.rundir.record import (
    MergedShard,
    PhoenixTarget,
    RunInfo,
    TurnRecord,
    UnitRef,
    append_event,
    write_run,
)
from memeval.rundir.results import GRADES_FILE, RunResults, merge_calibrations, save_results
from memeval.rundir.saved import SavedRun
from memeval.rundir.shard import Shard, shard_units

# model_info keys that describe the machine, not the configuration (shards may run on CI
# machines of another CPU; the gate names a CPU that differs from the baseline's)
MACHINE_KEYS = frozenset({"weights_file", "cpu"})


def merge_shards(shard_dirs: Sequence[Path], out: Path, argv: Sequence[str] = ()) -> Path:
    """Write the merged run directory `out` (created; it must not hold files yet)."""
    if not shard_dirs:
        raise RunDirError("name the shard run directories to merge")
    runs = [SavedRun.open(Path(d)) for d in shard_dirs]
    planned = _check(runs)
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise RunDirError(f"{out}: already exists and is not empty; merge into a new directory")
    out.mkdir(parents=True, exist_ok=True)
    first = runs[0].info
    info = first.model_copy(
        update={
            "run_id": new_run_id(list(first.scenarios), first.memory) + "-merged",
            "created_at": min(r.info.created_at for r in runs),
            "finished_at": max(r.info.finished_at or "" for r in runs) or utc_now(),
            "status": "complete",
            "argv": list(argv),
            "units": planned,
            "shard": None,
            "merged_from": [
                MergedShard(run_id=r.run_id, index=_shard(r).index, count=_shard(r).count)
                for r in sorted(runs, key=lambda r: _shard(r).index)
            ],
            "phoenix": _phoenix(runs),
            "fingerprint": _fingerprint(runs),
            "error": None,
        }
    )
    write_run(out, info)
    for unit in planned:
        run = next(r for r in runs if any(_belongs(unit, u) for u in r.info.units))
        for record in _unit_records(run, unit):
            _copy_snapshot(run, record, out)
            append_event(out, record)
    _merge_results(runs, planned, info.run_id, out)
    _merge_grades(runs, out)
    return out


def configuration(info: RunInfo) -> dict[str, Any]:
    """What must be equal for shards to be one run: everything that shapes results, and the
    plan; not the run id, times, argv, concurrency, or where files sat on each machine."""
    shard = info.shard
    return {
        "memory": info.memory,
        "config": info.config.model_dump(exclude={"concurrency"}),
        "models": info.models,
        "model_info": {
            role: {k: v for k, v in described.items() if k not in MACHINE_KEYS}
            for role, described in info.model_info.items()
        },
        "strategies": info.strategies,
        "versions": info.versions,
        "prompt_hashes": info.prompt_hashes,
        "scenario_hashes": sorted(info.scenario_hashes.values()),
        "scenarios": {
            name: scenario.model_dump(exclude={"path", "files"})
            for name, scenario in info.scenarios.items()
        },
        # code, scenario and model hashes; not the cache hits, which are each shard's own
        "fingerprint": info.fingerprint.model_dump(exclude={"cache"}) if info.fingerprint else None,
        "shard_count": shard.count if shard else None,
        "planned_units": [u.model_dump() for u in shard.planned] if shard else None,
    }


def first_difference(a: Any, b: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """The first place two JSON-like values differ: (dotted path, a's value, b's value)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            found = first_difference(a.get(key), b.get(key), f"{path}.{key}" if path else key)
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            found = first_difference(x, y, f"{path}[{k}]")
            if found is not None:
                return found
        return None
    return None if a == b else (path, a, b)


def _check(runs: list[SavedRun]) -> list[UnitRef]:
    """Every run a complete shard of one configuration, each shard once: the whole plan."""
    for run in runs:
        if run.info.shard is None:
            raise RunDirError(
                f"{run.path}: not a shard (it was run without --shard I/N); merge joins the "
                "run directories of `memeval run --shard I/N`"
            )
        if run.info.status != "complete":
            raise RunDirError(
                f"{run.path}: shard {_shard(run)} is {run.info.status}; finish it with "
                f"`memeval run --resume {run.path}` before merging"
            )
    base = runs[0]
    reference = configuration(base.info)
    for run in runs[1:]:
        found = first_difference(reference, configuration(run.info))
        if found is not None:
            where, mine, theirs = found
            raise RunDirError(
                f"{run.path}: shard {_shard(run)} differs from {base.path} in {where} "
                f"({_brief(theirs)} vs {_brief(mine)}); merge only shards of one configuration"
            )
    seen: dict[int, SavedRun] = {}
    for run in runs:
        index = _shard(run).index
        if index in seen:
            raise RunDirError(
                f"{run.path}: shard {_shard(run)} is given twice (also {seen[index].path})"
            )
        seen[index] = run
    count = _shard(base).count
    missing = [str(k) for k in range(1, count + 1) if k not in seen]
    if missing:
        raise RunDirError(
            f"shard{'s' if len(missing) > 1 else ''} {', '.join(missing)} of {count} missing; "
            f"pass all {count} shard run directories"
        )
    planned = list(base.info.shard.planned) if base.info.shard else []
    for run in runs:
        if run.info.units != shard_units(planned, _shard(run)):
            raise RunDirError(
                f"{run.path}: its units are not slice {_shard(run)} of the planned units"
            )
    return planned


def _shard(run: SavedRun) -> Shard:
    shard = run.info.shard
    assert shard is not None  # checked first in _check
    return Shard(shard.index, shard.count)


def _belongs(unit: UnitRef, item: Any) -> bool:
    """Whether a record (a turn, a verdict, a unit) is of `unit`: every field a unit has
    (scenario, repeat, and any other dimension) that the item also has is equal."""
    return all(getattr(item, k) == v for k, v in unit.model_dump().items() if hasattr(item, k))


def _unit_records(run: SavedRun, unit: UnitRef) -> list[TurnRecord]:
    for records in run.units().values():
        if records and _belongs(unit, records[0]):
            return records
    return []


def _copy_snapshot(run: SavedRun, record: TurnRecord, out: Path) -> None:
    if not record.snapshot:
        return
    text = run.snapshot(record)  # checks the path stays inside the shard's directory
    target = (out / record.snapshot).resolve()
    if not target.is_relative_to(out.resolve()):  # pragma: no cover - run.snapshot refused it
        raise RunDirError(f"{run.path}: turn {record.turn} names a snapshot outside the run")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def _merge_results(runs: list[SavedRun], planned: list[UnitRef], run_id: str, out: Path) -> None:
    """The shards' verdicts in plan order; metrics are left to grading (they pool units)."""
    graded = [r.results for r in runs if r.results is not None]
    if not graded:
        return
    merged = RunResults(
        run_id=run_id,
        graded_at=max(g.graded_at for g in graded),
        judge_model=next((g.judge_model for g in graded if g.judge_model), None),
        judge_calibration=merge_calibrations([g.judge_calibration for g in graded]),
    )
    turns: list[list[Any]] = [[] for _ in planned]
    facts: list[list[Any]] = [[] for _ in planned]
    for results in graded:
        for items, buckets in ((results.turns, turns), (results.facts, facts)):
            for item in items:
                k = next((k for k, unit in enumerate(planned) if _belongs(unit, item)), None)
                if k is not None:
                    buckets[k].append(item)
    merged.turns = [t for bucket in turns for t in bucket]
    merged.facts = [f for bucket in facts for f in bucket]
    save_results(out, merged)


def _merge_grades(runs: list[SavedRun], out: Path) -> None:
    """Human grades given in any shard travel along (grading validates them)."""
    entries: list[Any] = []
    for run in runs:
        path = run.path / GRADES_FILE
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except ValueError as exc:
                raise RunDirError(f"{path}: not valid JSON ({exc})") from None
            entries += data.get("grades", []) if isinstance(data, dict) else []
    if entries:
        text = json.dumps({"schema_version": 1, "grades": entries}, indent=2)
        (out / GRADES_FILE).write_text(text + "\n", encoding="utf-8")


def _fingerprint(runs: list[SavedRun]) -> Fingerprint | None:
    """The shards' common fingerprint (checked equal but for the cache) with their cache use
    added up."""
    first = runs[0].info.fingerprint
    if first is None:
        return None
    uses = [r.info.fingerprint.cache for r in runs if r.info.fingerprint is not None]
    if len(uses) != len(runs) or any(use is None for use in uses):
        return first.model_copy(update={"cache": None})
    cache = CacheUse(
        hits=sum(use.hits for use in uses if use is not None),
        calls=sum(use.calls for use in uses if use is not None),
        enabled=all(use.enabled for use in uses if use is not None),
    )
    return first.model_copy(update={"cache": cache})


def _phoenix(runs: list[SavedRun]) -> PhoenixTarget | None:
    """The Phoenix the shards were traced to, when they all were, to one URL: the report's
    turn links need only the URL (span ids are unique across projects)."""
    targets = [r.info.phoenix for r in runs]
    urls = {t.url if t is not None else None for t in targets}
    if len(urls) != 1 or None in urls or targets[0] is None:
        return None
    projects = {t.project for t in targets if t is not None}
    return targets[0].model_copy(update={"project": projects.pop() if len(projects) == 1 else ""})


def _brief(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."
