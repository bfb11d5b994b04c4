"""Problems found in a scenario file, and pydantic's errors turned into them.

A check collects `Problem`s; the earliest by line becomes the one-line `ScenarioError`
(`FILE:LINE: key: problem (valid: ...)`), so a user fixes a file from the top down.
"""

from __future__ import annotations

import types
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from memeval.scenario.schema import Scenario
from memeval.scenario.yamlsource import YamlDoc, YPath


@dataclass(frozen=True)
class Problem:
    path: YPath
    message: str
    at_key: bool = False  # point at the key's line (unknown keys) rather than the value's


def raise_first(doc: YamlDoc, problems: Iterable[Problem]) -> None:
    """Raise the problem that comes first in the file, if there is any."""
    found = list(problems)
    if found:
        first = min(found, key=lambda p: doc.line(p.path, p.at_key))
        raise doc.error(first.path, first.message, first.at_key)


def show(value: Any, limit: int = 60) -> str:
    """A short, one-line rendering of a value from the file."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def kind_of(value: Any) -> str:
    """What a YAML value is, in the words a scenario author uses."""
    if value is None:
        return "null"
    for typ, name in ((bool, "a boolean"), (int, "an integer"), (float, "a number")):
        if isinstance(value, typ):
            return f"{name} ({show(value)})"
    if isinstance(value, str):
        return f"a string ({show(value, 40)})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def listing(names: Iterable[str], limit: int = 12) -> str:
    """`a, b, c` (the valid choices), shortened when there are many."""
    items = list(names)
    if not items:
        return "none"
    more = f", ... ({len(items) - limit} more)" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


EXPECTED = {
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "bool_type": "true or false",
    "int_type": "an integer",
}


def from_validation(doc: YamlDoc, exc: ValidationError) -> list[Problem]:
    """Translate pydantic's errors on a `Scenario` into problems with valid choices."""
    out = []
    for err in exc.errors():
        path: YPath = tuple(p for p in err["loc"] if isinstance(p, str | int))
        kind, value = err["type"], err.get("input")
        if kind == "extra_forbidden":
            fields = _fields_at(path[:-1])
            out.append(Problem(path, f"unknown key (valid: {listing(fields, 20)})", at_key=True))
        elif kind == "missing":
            out.append(Problem(path, "required key is missing", at_key=True))
        elif kind == "literal_error":
            choices = _literal_at(path)
            out.append(Problem(path, f"{show(value)} is not valid (valid: {listing(choices)})"))
        elif kind in EXPECTED:
            out.append(Problem(path, f"expected {EXPECTED[kind]}, got {kind_of(value)}"))
        elif kind == "string_pattern_mismatch":
            pattern = (err.get("ctx") or {}).get("pattern", "")
            out.append(Problem(path, f"{show(value)} is not valid (valid: matches {pattern})"))
        elif kind == "too_short":
            out.append(Problem(path, "must not be empty (give at least one item)"))
        else:
            out.append(Problem(path, str(err["msg"]).lower()))
    return out


def _annotation_at(path: YPath) -> Any:
    """The type annotation the schema gives the value at `path` (None when unknown)."""
    typ: Any = Scenario
    for part in path:
        typ = _unwrap(typ)
        if isinstance(typ, type) and issubclass(typ, BaseModel) and isinstance(part, str):
            info = typ.model_fields.get(part)
            typ = info.annotation if info else None
        elif get_origin(typ) is list and isinstance(part, int):
            typ = get_args(typ)[0]
        elif get_origin(typ) is dict and isinstance(part, str):
            typ = get_args(typ)[1]
        else:
            return None
    return typ


def _unwrap(typ: Any) -> Any:
    """`X | None` -> X."""
    if get_origin(typ) in (Union, types.UnionType):
        args = [a for a in get_args(typ) if a is not type(None)]
        return args[0] if len(args) == 1 else typ
    return typ


def _fields_at(path: YPath) -> list[str]:
    typ = _unwrap(_annotation_at(path))
    if isinstance(typ, type) and issubclass(typ, BaseModel):
        return list(typ.model_fields)
    return []


def _literal_at(path: YPath) -> list[str]:
    typ = _unwrap(_annotation_at(path))
    return [str(a) for a in get_args(typ)] if get_origin(typ) is Literal else []
