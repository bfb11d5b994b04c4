"""A run's fingerprint in run.json, and what `memeval gate` and `memeval compare` say when the
baseline's run was made differently."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memeval.cli import app
from memeval.models.registry import cpu_name, describe
from memeval.models.spec import parse_spec
from memeval.provenance import differences
from memeval.rundir.fingerprint import CODE_GROUPS, CacheUse, Fingerprint
from memeval.rundir.record import read_run, write_run

runner = CliRunner(env={"COLUMNS": "250"})


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs")
    result = runner.invoke(
        app, ["run", "legal-rag", "--model", "fake", "--out", str(out), "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    return run_dir


def variant(run_dir: Path, dest: Path, **changes: object) -> Path:
    """A copy of the run whose fingerprint differs as asked."""
    shutil.copytree(run_dir, dest)
    info = read_run(dest)
    assert info.fingerprint is not None
    info.fingerprint = info.fingerprint.model_copy(update=changes)
    write_run(dest, info)
    return dest


def test_run_json_records_the_fingerprint(fake_run: Path) -> None:
    fp = read_run(fake_run).fingerprint
    assert fp is not None
    assert set(fp.code) == set(CODE_GROUPS) and all(len(h) == 64 for h in fp.code.values())
    assert "reference_memory/prompts/summarizer_system.j2" in fp.files["prompts"]
    assert "memeval/grading/judge.py" in fp.files["grading code"]
    assert not any("report/" in f for group in fp.files.values() for f in group)
    assert set(fp.scenarios) == {"legal-rag"}
    assert fp.models["agent"] == {"spec": "fake", "backend": "fake"}
    assert fp.settings["memory"] == "file" and "updater strategy" in fp.settings
    # the fake stand-in is never cached: every call was made, none replayed
    assert fp.cache == CacheUse(hits=0, calls=fp.cache.calls, enabled=True) and fp.cache.calls


def test_the_local_back_end_describes_batch_sizes_and_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("llama_cpp")
    monkeypatch.setenv("MEMEVAL_LOCAL_THREADS", "2")
    info = describe(parse_spec("local:qwen2.5-coder-0.5b"))
    assert info["threads"] == 2
    # the batch sizes the engine evaluates with, not llama-cpp-python's defaults
    from memeval.models.local import CHUNK

    assert info["n_batch"] == info["n_ubatch"] == CHUNK
    assert len(info["weights_sha256"]) == 64 and info["llama_cpp_python"]
    assert info["cpu"] and info["cpu"] == cpu_name()


def local(threads: int, version: str = "0.3.36", cpu: str = "AMD EPYC") -> dict[str, object]:
    return {
        "spec": "local:qwen2.5-coder-1.5b",
        "backend": "local",
        "weights_sha256": "1d9614638d18" + "0" * 52,
        "llama_cpp_python": version,
        "n_batch": 512,
        "threads": threads,
        "cpu": cpu,
    }


def test_each_difference_says_what_it_means() -> None:
    base = Fingerprint(
        code={"prompts": "a", "grading code": "g"},
        files={"prompts": {"reference_memory/prompts/x.j2": "1"}, "grading code": {}},
        scenarios={"book": "s"},
        models={"agent": local(2), "judge": local(2)},
        settings={"memory": "file"},
        cache=CacheUse(hits=0, calls=300),
    )
    assert differences(base, base) == []
    run = base.model_copy(
        update={
            "code": {"prompts": "b", "grading code": "g"},
            "files": {"prompts": {"reference_memory/prompts/x.j2": "2"}, "grading code": {}},
            "models": {
                "agent": local(4, "0.3.40", "Intel Xeon"),
                "judge": local(4, "0.3.40", "Intel Xeon"),
            },
            "cache": CacheUse(hits=150, calls=300),
        }
    )
    lines = [d.line() for d in differences(base, run)]
    assert lines == [
        "prompts: reference_memory/prompts/x.j2 (changed) — prompts changed: a verdict change "
        "may be the change you made",
        "llama.cpp: 0.3.36 → 0.3.40 (agent, judge) — llama.cpp versions differ: numerics may "
        "differ",
        "threads: 2 → 4 (agent, judge) — threads differ: numerics may differ",
        "CPU: AMD EPYC → Intel Xeon (agent, judge) — CPUs differ: numerics may differ",
        "cache hits: 0 of 300 calls → 150 of 300 — answers served from the response cache were "
        "replayed, not computed again: each is the answer the model gave then; asked again, a "
        "hosted model may answer otherwise (the embedded one answers a request the same way on "
        "the same code, threads and CPU)",
    ]
    other = run.model_copy(update={"models": {"agent": {"spec": "openai:gpt-4o-mini"}}})
    parts = [d.part for d in differences(base, other)]
    assert "models" in parts and "role judge" in parts


def test_gate_and_compare_print_the_differences(fake_run: Path, tmp_path: Path) -> None:
    fp = read_run(fake_run).fingerprint
    assert fp is not None
    models = {role: {**m, "threads": 4} for role, m in fp.models.items()}
    other = variant(fake_run, tmp_path / "other", models=models, cache=CacheUse(hits=9, calls=9))
    base = tmp_path / "baseline.json"
    assert runner.invoke(app, ["gate", str(fake_run), "--write-baseline", str(base)]).exit_code == 0
    result = runner.invoke(app, ["gate", str(other), "--baseline", str(base)])
    assert result.exit_code == 0, result.output
    assert "threads: – → 4 (agent, " in result.stdout
    assert "threads differ: numerics may differ" in result.stdout
    assert "cache hits: 0 of" in result.stdout

    same = runner.invoke(app, ["gate", str(fake_run), "--baseline", str(base)])
    assert "same prompts, code, scenarios, models and settings" in same.stdout

    shown = runner.invoke(app, ["compare", str(fake_run), str(other)])
    assert shown.exit_code == 0, shown.output
    assert "what differs between the runs:" in shown.stdout
    assert "threads differ: numerics may differ" in shown.stdout
    page = (other / "compare.html").read_text(encoding="utf-8")
    assert "What differs between the runs" in page and "threads differ" in page
