"""What every importer shares: reading the user's file, naming its source, writing the YAML.

An imported scenario is ordinary scenario YAML. Where it came from (dataset, file name and
sha256, the part kept, the dataset's licence) goes in a comment header for the reader and in
the scenario's `description`, which `run.json` and the report carry.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from memeval.errors import ConfigError
from memeval.scenario.loader import load_file
from memeval.scenario.schema import Scenario


@dataclass(frozen=True)
class Source:
    """Where an imported scenario came from."""

    dataset: str  # "LoCoMo", "Letta core-memory-update"
    file: str  # the file's name as given (never its directory: reports are shared)
    sha256: str
    selection: str  # "sample conv-26, sessions 1-3 of 19, 21 of 199 questions"
    licence: str

    def line(self) -> str:
        return (
            f"Imported from {self.dataset} ({self.file}, sha256 {self.sha256[:16]}): "
            f"{self.selection}. {self.licence}"
        )


def read_bytes(path: Path) -> tuple[bytes, str]:
    """The file's bytes and their sha256; a missing or unreadable file is a one-line error."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file (give the dataset file you downloaded)") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory (give the dataset file itself)") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it ({exc.strerror})") from None
    return data, hashlib.sha256(data).hexdigest()


def parse_json(path: Path, data: bytes) -> Any:
    """One JSON document; anything else is a one-line error naming the line."""
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text (expected a JSON file)") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); expected a JSON file"
        ) from None


def parse_jsonl(path: Path, data: bytes) -> list[Any]:
    """One JSON value per non-blank line; a bad line is a one-line error naming it."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text (expected a JSONL file)") from None
    rows: list[Any] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"{path}:{number}: not valid JSON ({exc.msg}); expected one JSON object per line"
            ) from None
    return rows


def need(value: Any, kind: type | tuple[type, ...], where: str, what: str) -> Any:
    """`value` when it is of `kind`, else a one-line error saying what was expected."""
    if isinstance(value, kind) and not isinstance(value, bool):
        return value
    got = "missing" if value is None else f"a {type(value).__name__}"
    raise ConfigError(f"{where}: expected {what}, got {got}")


def slug(text: str, limit: int = 40) -> str:
    """Lowercase letters, digits and '-' only: safe in scenario names and ids."""
    out = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return out[:limit].strip("-") or "x"


def write_scenario(doc: dict[str, Any], source: Source, out: Path, command: str) -> Scenario:
    """Write `doc` with a comment header once the full scenario checks accept it.

    The file is written beside `out` and moved into place only when `memeval scenarios
    validate` would accept it, so a failed import never leaves half a file or replaces a good
    one. A path that is a directory or whose folder is missing is a one-line error.
    """
    if out.is_dir():
        raise ConfigError(f"--out {out}: is a directory (give a file name ending in .yaml)")
    if not out.parent.is_dir():
        raise ConfigError(f"--out {out}: folder {out.parent} does not exist")
    header = [
        f"# {source.dataset}, imported by `{command}`",
        f"# file: {source.file} (sha256 {source.sha256})",
        f"# kept: {source.selection}",
        f"# licence: {source.licence}",
        "# Derived from that dataset: use it under the dataset's licence.",
    ]
    body = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)
    partial = out.with_name(f".{out.name}.partial")
    partial.write_text("\n".join(header) + "\n" + body, encoding="utf-8")
    try:
        scenario = load_file(partial)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, out)
    return scenario
