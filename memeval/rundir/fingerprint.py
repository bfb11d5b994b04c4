"""What produced a run's verdicts, as hashes a baseline can be checked against.

A fingerprint has a part per cause of a changed verdict:
- `code`: one sha256 per group of source files on the path from a scenario to its verdicts
  (CODE_GROUPS); `files` keeps every file's own hash by group, so a difference names files;
- `scenarios`: per scenario, a hash of every scenario file it was read from (includes too);
- `models`: per role, the spec and what the back end says about the exact model and engine
  (weights sha256, llama.cpp version, context, threads, batch sizes, endpoint);
- `settings`: run options that shape results (memory system, agent, strategies, store);
- `cache`: how many of the run's turn calls the response cache served (filled when the run
  ends; a cache hit replays an earlier answer instead of asking the model).

File hashes read the bytes with CRLF turned into LF, so a checkout's line endings do not
count as a change. Only the files below count: report templates, the CLI, tables, the
gate itself and documentation do not change what a run's model calls or checks produce.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import Field

from memeval.rundir.update import Record

# group -> glob patterns, each "<package>/<pattern relative to the package directory>"
CODE_GROUPS: dict[str, tuple[str, ...]] = {
    "prompts": (
        "reference_memory/prompts/*.j2",
        "memeval/prompts/*.j2",
        "memeval/grading/prompts/*.j2",
    ),
    "pipeline code": ("reference_memory/**/*.py",),
    "agent and runner code": (
        "memeval/agent.py",
        "memeval/tools.py",
        "memeval/replay/*.py",
        "memeval/runner.py",
        "memeval/strategy_defaults.py",
        "memeval/systems/*.py",
    ),
    "model code": ("memeval/models/*.py",),
    "grading code": ("memeval/grading/*.py",),
    "scenario code": ("memeval/scenario/*.py",),
}
PACKAGES = ("reference_memory", "memeval")

# what run.json's model_info may say that bears on the numbers a model computes
MODEL_KEYS = (
    "spec",
    "backend",
    "model",
    "name",
    "base_url",
    "weights_sha256",
    "llama_cpp_python",
    "n_ctx",
    "n_batch",
    "n_ubatch",
    "threads",
    "cpu",
)


class CacheUse(Record):
    """Turn calls of the run served by the response cache (`hits` of `calls`)."""

    hits: int = 0
    calls: int = 0
    enabled: bool = True


class Fingerprint(Record):
    code: dict[str, str] = Field(default_factory=dict)  # group -> sha256 over its files
    files: dict[str, dict[str, str]] = Field(default_factory=dict)  # group -> {path: sha256}
    scenarios: dict[str, str] = Field(default_factory=dict)  # scenario name -> sha256
    models: dict[str, dict[str, Any]] = Field(default_factory=dict)  # role -> MODEL_KEYS
    settings: dict[str, str] = Field(default_factory=dict)
    cache: CacheUse | None = None  # None until the run has ended


def package_roots() -> dict[str, Path]:
    """Where the installed (or checked-out) packages are."""
    import reference_memory

    return {
        "reference_memory": Path(reference_memory.__file__).resolve().parent,
        "memeval": Path(__file__).resolve().parents[1],
    }


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes().replace(b"\r\n", b"\n")).hexdigest()


def code_files(roots: Mapping[str, Path] | None = None) -> dict[str, dict[str, str]]:
    """group -> {"package/path": sha256} for every file CODE_GROUPS names."""
    roots = roots or package_roots()
    found: dict[str, dict[str, str]] = {}
    for group, patterns in CODE_GROUPS.items():
        files: dict[str, str] = {}
        for pattern in patterns:
            package, _, glob = pattern.partition("/")
            root = roots[package]
            for path in sorted(root.glob(glob)):
                if path.is_file():
                    files[f"{package}/{path.relative_to(root).as_posix()}"] = file_hash(path)
        found[group] = files
    return found


def digest(items: Mapping[str, str]) -> str:
    """One sha256 over name/hash pairs, independent of their order."""
    text = "".join(f"{name}\0{value}\n" for name, value in sorted(items.items()))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def code_fingerprint(
    roots: Mapping[str, Path] | None = None,
) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """(group -> hash, group -> {file -> hash}) of the code and prompts a run's verdicts
    depend on."""
    groups = code_files(roots)
    return {group: digest(members) for group, members in groups.items()}, groups


def scenario_hash(files: Iterable[str | Path]) -> str:
    """A scenario's hash: its file and every file it includes, by file name and content."""
    return digest({Path(f).name: file_hash(Path(f)) for f in files if str(f)})


def model_print(info: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a role's run.json `model_info` that can change what the model computes."""
    return {key: info[key] for key in MODEL_KEYS if info.get(key) is not None}


def make_fingerprint(
    *,
    scenario_files: Mapping[str, Iterable[str | Path]],
    model_info: Mapping[str, Mapping[str, Any]],
    settings: Mapping[str, str],
    roots: Mapping[str, Path] | None = None,
) -> Fingerprint:
    """The fingerprint of a run about to start (its cache use is added when it ends)."""
    code, files = code_fingerprint(roots)
    return Fingerprint(
        code=code,
        files=files,
        scenarios={name: scenario_hash(paths) for name, paths in scenario_files.items()},
        models={role: model_print(info) for role, info in model_info.items()},
        settings=dict(settings),
    )


def cache_use(calls: Iterable[bool], enabled: bool = True) -> CacheUse:
    """Count cache hits from each call's `cached` flag."""
    flags = list(calls)
    return CacheUse(hits=sum(flags), calls=len(flags), enabled=enabled)
