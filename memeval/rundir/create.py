"""Creating a run directory and recording what produced it (versions, prompt and scenario
hashes) so a report can say exactly which prompts and scenarios gave which results."""

from __future__ import annotations

import hashlib
import importlib.metadata
import platform
import re
import secrets
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

import reference_memory
from memeval.version import __version__

SAFE_RE = re.compile(r"[^A-Za-z0-9._-]+")


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def safe_name(text: str, limit: int = 80) -> str:
    """A file-name-safe rendering of an id from a scenario (never a path of its choosing)."""
    name = SAFE_RE.sub("_", text).strip("._") or "x"
    return name[:limit]


def new_run_id(scenarios: Iterable[str], memory: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    names = "+".join(safe_name(s, 24) for s in scenarios)[:60]
    return f"{stamp}-{names}-{safe_name(memory, 20)}-{secrets.token_hex(2)}"


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def prompt_hashes() -> dict[str, str]:
    """sha256 of every prompt template the run may use (pipeline, agent, judge)."""
    roots = {
        "reference_memory": Path(reference_memory.__file__).parent,
        "memeval": Path(__file__).resolve().parents[1],
    }
    hashes: dict[str, str] = {}
    for package, root in roots.items():
        for path in sorted(root.rglob("*.j2")):
            if "templates" in path.parts:  # report templates don't change results
                continue
            hashes[f"{package}/{path.relative_to(root).as_posix()}"] = sha256_file(path)
    return hashes


def versions() -> dict[str, str]:
    found = {"memeval": __version__, "python": platform.python_version()}
    for dist in ("openai", "llama-cpp-python", "pydantic", "arize-phoenix", "psycopg"):
        try:
            found[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def snapshot_path(scenario: str, repeat: int, index: int, turn: str) -> str:
    """Relative path of the memory snapshot after one turn."""
    return f"snapshots/{safe_name(scenario)}/r{repeat}/{index:04d}-{safe_name(turn)}.md"
