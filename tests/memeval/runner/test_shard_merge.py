"""`--shard I/N` and `memeval merge`: disjoint, deterministic slices of the planned units that
join into the run an unsharded `memeval run` writes: the same verdicts, tables, report and
gate. And the one-line refusals: not a shard, an unfinished shard, a shard given twice or
missing, shards of different configurations."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memeval.cli.app import app
from memeval.gate import GateConfig, check_gate
from memeval.rundir.record import PhoenixTarget, UnitRef, read_events, read_run, write_run
from memeval.rundir.saved import SavedRun
from memeval.rundir.shard import Shard, parse_shard, shard_units

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[3]
TIMINGS = {"latency_s", "agent_s", "pipeline_s", "turn_s", "lag_s", "wall_s"}
LATENCIES = {"pipeline_latency", "pipeline_latency_compaction", "update_lag"}


def run(args: list[str], out: Path) -> Path:
    result = runner.invoke(
        app, ["run", *args, "--model", "fake", "--out", str(out), "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    if "--shard" in args:
        assert "units; join every shard with `memeval merge`" in result.output
    (run_dir,) = list(out.iterdir())
    return run_dir


def merge(dirs: list[Path], out: Path, *extra: str) -> Any:
    return runner.invoke(app, ["merge", *map(str, dirs), "--out", str(out), *extra])


def sharded(args: list[str], tmp_path: Path, count: int = 2) -> list[Path]:
    shards = range(1, count + 1)
    return [run([*args, "--shard", f"{i}/{count}"], tmp_path / f"s{i}") for i in shards]


def timeless(value: Any) -> Any:
    """JSON without what differs between two runs of the same thing: ids, clocks, timings."""
    if isinstance(value, dict):
        drop = TIMINGS | LATENCIES | {"run_id", "graded_at", "started_at", "finished_at"}
        drop |= {"trace_id", "span_id", "timings"}
        return {k: timeless(v) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [timeless(v) for v in value]
    return value


def table(run_dir: Path, name: str) -> list[dict[str, str]]:
    with open(run_dir / f"{name}.csv", encoding="utf-8") as fh:
        return [{k: v for k, v in row.items() if k not in TIMINGS} for row in csv.DictReader(fh)]


def page(run_dir: Path) -> str:
    """report.html with the run's id, clocks and timings blanked, and the merge note cut."""
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    html = html.replace(read_run(run_dir).run_id, "RUN-ID")
    html = re.sub(r"<span class=\"chip\" title=\"memeval merge joined.*?</code></span>", "", html)
    html = re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+Z", "TIME", html)
    return re.sub(r"\b\d+(\.\d+)? (ms|s)\b", "SECS", html)


@pytest.mark.parametrize(
    "args",
    [["combined"], ["combined", "--repeat", "2"], ["combined", "book-summary", "--repeat", "2"]],
    ids=["combined", "combined-x2", "two-scenarios-x2"],
)
def test_shards_merged_equal_the_unsharded_fake_combined_run(
    tmp_path: Path, args: list[str]
) -> None:
    whole = run(args, tmp_path / "whole")
    shards = sharded(args, tmp_path)
    result = merge(shards, tmp_path / "merged")
    assert result.exit_code == 0, result.output
    merged = tmp_path / "merged"

    # the shards are disjoint slices and together the plan; run.json records the shard
    infos = [read_run(d) for d in shards]
    planned = read_run(whole).units
    assert [(i.shard.index, i.shard.count) for i in infos if i.shard] == [(1, 2), (2, 2)]
    assert all(i.shard and i.shard.planned == planned for i in infos)
    assert sorted(u.model_dump_json() for i in infos for u in i.units) == sorted(
        u.model_dump_json() for u in planned
    )
    info = read_run(merged)
    assert info.units == planned and info.shard is None and info.status == "complete"
    assert info.fingerprint is not None and info.fingerprint.cache is not None
    assert info.fingerprint.cache.calls == sum(
        i.fingerprint.cache.calls for i in infos if i.fingerprint and i.fingerprint.cache
    )
    assert info.fingerprint.code == read_run(whole).fingerprint.code  # type: ignore[union-attr]
    assert [m.run_id for m in info.merged_from] == [i.run_id for i in infos]

    # turns, snapshots, verdicts, tables and report equal the unsharded run's
    whole_events = [timeless(e.model_dump()) for e in read_events(whole)]
    assert [timeless(e.model_dump()) for e in read_events(merged)] == whole_events
    for event in read_events(merged):
        assert (merged / event.snapshot).read_text() == (whole / event.snapshot).read_text()
    verdicts = [json.loads((d / "verdicts.json").read_text()) for d in (whole, merged)]
    assert timeless(verdicts[1]) == timeless(verdicts[0])
    assert verdicts[0]["turns"] and verdicts[0]["metrics"]
    for name in ("turns", "questions", "facts", "llm_calls"):
        assert table(merged, name) == table(whole, name), name
    assert page(merged) == page(whole)

    # and so does the gate, against the unsharded run and against the committed baseline
    for baseline in (whole, ROOT / "ci" / "memeval-baseline.json"):
        gates = [
            check_gate(SavedRun.open(d).graded(), baseline, GateConfig()) for d in (whole, merged)
        ]
        assert gates[1].deltas == gates[0].deltas
        assert gates[1].exit_code == gates[0].exit_code


def test_merge_gates_and_writes_junit_like_run(tmp_path: Path) -> None:
    args = ["legal-rag", "--repeat", "3"]
    whole = run(args, tmp_path / "whole")
    shards = sharded(args, tmp_path, count=3)
    junit = tmp_path / "merged.xml"
    result = merge(shards, tmp_path / "merged", "--baseline", str(whole), "--junit", str(junit))
    assert result.exit_code == 0, result.output
    assert "report: " in result.output and junit.is_file()
    assert "legal-rag" in result.output  # the summary, pooled over the three repeats
    (m,) = SavedRun.open(tmp_path / "merged").graded().metrics
    assert m.repeats == 3


def test_slices_are_disjoint_complete_and_deterministic() -> None:
    units = [UnitRef(scenario=s, repeat=k) for s in ("a", "b", "c") for k in range(3)]
    for count in range(1, 11):
        slices = [shard_units(units, Shard(i, count)) for i in range(1, count + 1)]
        flat = [u for part in slices for u in part]
        assert sorted(flat, key=units.index) == units and len(flat) == len(units)
        assert slices == [shard_units(units, Shard(i, count)) for i in range(1, count + 1)]
        assert max(map(len, slices)) - min(map(len, slices)) <= 1  # balanced
    # round-robin: the repeats of one scenario go to different machines
    assert [u.repeat for u in shard_units(units, Shard(1, 3))] == [0, 0, 0]
    assert [u.scenario for u in shard_units(units, Shard(1, 3))] == ["a", "b", "c"]


@pytest.mark.parametrize("text", ["0/2", "3/2", "1/0", "a/b", "1", "1/2/3", "-1/2", ""])
def test_a_bad_shard_is_one_line_and_exit_2(tmp_path: Path, text: str) -> None:
    with pytest.raises(Exception, match="must be I/N"):
        parse_shard(text)
    result = runner.invoke(app, ["run", "mini", "--model", "fake", "--shard", text])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "--shard" in result.output


def test_merge_refuses_what_is_not_one_run(tmp_path: Path) -> None:
    args = ["legal-rag", "--repeat", "2"]
    one, two = sharded(args, tmp_path)
    other = run([*args, "--shard", "2/2", "--async-memory"], tmp_path / "async")
    three = run([*args, "--shard", "2/3"], tmp_path / "thirds")
    whole = run(args, tmp_path / "whole")

    def refused(dirs: list[Path], expected: str, out: str = "m") -> None:
        result = merge(dirs, tmp_path / out)
        assert result.exit_code == 2, result.output
        assert result.output.count("\n") == 1 and expected in result.output, result.output
        assert not (tmp_path / out).exists()  # nothing written

    refused([one, other], "differs from")
    refused([one, other], "config.async_memory (true vs false)")
    refused([one, three], "shard_count (3 vs 2)")
    refused([one], "shard 2 of 2 missing")
    refused([one, one, two], "given twice")
    refused([one, whole], "not a shard")

    info = read_run(two)
    info.status = "interrupted"
    write_run(two, info)
    refused([one, two], "is interrupted; finish it with `memeval run --resume")
    info.status = "complete"
    write_run(two, info)

    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    result = merge([one, two], tmp_path / "full")
    assert result.exit_code == 2 and "not empty" in result.output
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"
    assert merge([one, two], tmp_path / "ok").exit_code == 0


def test_a_shard_resumes_its_own_slice(tmp_path: Path) -> None:
    """--resume of a shard plays that shard's units only (run.json's units, not the plan)."""
    args = ["legal-rag", "--repeat", "2", "--shard", "2/2"]
    shard = run(args, tmp_path / "s")
    events = read_events(shard)
    assert {e.repeat for e in events} == {1}
    lines = (shard / "events.jsonl").read_text().splitlines(keepends=True)
    (shard / "events.jsonl").write_text("".join(lines[:2]))
    info = read_run(shard)
    info.status = "interrupted"
    write_run(shard, info)
    result = runner.invoke(app, ["run", "--resume", str(shard), "--model", "fake", "--no-progress"])
    assert result.exit_code == 0, result.output
    again = read_events(shard)
    assert {e.repeat for e in again} == {1} and len(again) == len(events)


def test_the_merged_run_keeps_the_phoenix_its_shards_were_traced_to(tmp_path: Path) -> None:
    shards = sharded(["legal-rag", "--repeat", "2"], tmp_path)
    for k, shard in enumerate(shards):
        info = read_run(shard)
        info.phoenix = PhoenixTarget(url="http://127.0.0.1:9", project=f"memeval-shard-{k}")
        write_run(shard, info)
    assert merge(shards, tmp_path / "traced").exit_code == 0
    phoenix = read_run(tmp_path / "traced").phoenix
    assert phoenix is not None and phoenix.url == "http://127.0.0.1:9" and phoenix.project == ""

    info = read_run(shards[1])
    info.phoenix = None
    write_run(shards[1], info)
    assert merge(shards, tmp_path / "partly").exit_code == 0
    assert read_run(tmp_path / "partly").phoenix is None
