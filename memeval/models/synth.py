"""Build a small, deterministic JSON value that is valid against a JSON schema.

Used by the `fake` stand-in, so a smoke run exercises every code path that parses model JSON.
Covers what structured-output schemas use: types, enum/const, objects (required properties
only), arrays (minItems), anyOf/oneOf/allOf, $ref into $defs/definitions, and string, number
and array bounds. `pattern` is not solved: a schema that needs one gets a plain string.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

_FORMATS = {
    "date": "2024-01-01",
    "date-time": "2024-01-01T00:00:00Z",
    "time": "00:00:00Z",
    "email": "fake@example.com",
    "uri": "https://example.com/fake",
    "url": "https://example.com/fake",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "ipv4": "127.0.0.1",
    "hostname": "example.com",
}
_MAX_DEPTH = 12


def synthesize(schema: Mapping[str, Any] | bool, text: str = "fake") -> Any:
    """A value valid against `schema`; `text` seeds the strings (kept within length bounds)."""
    root = schema if isinstance(schema, Mapping) else {}
    return _Synth(root, text).value(schema, 0)


class _Synth:
    def __init__(self, root: Mapping[str, Any], text: str) -> None:
        self.root = root
        self.text = text

    def value(self, schema: Mapping[str, Any] | bool, depth: int, variant: int = 0) -> Any:
        """`variant` > 0 asks for a different value where easy (array items under uniqueItems)."""
        if schema is True or schema is False or not schema:
            return None if depth else {}
        assert isinstance(schema, Mapping)
        if depth > _MAX_DEPTH:
            raise ValueError("schema nests (or recurses) too deeply to synthesize a value")
        if "$ref" in schema:
            return self.value(self.resolve(schema["$ref"]), depth + 1, variant)
        if "const" in schema:
            return schema["const"]
        if schema.get("enum"):
            return schema["enum"][variant % len(schema["enum"])]
        for key in ("anyOf", "oneOf"):
            if schema.get(key):
                return self.value(self._simplest(schema[key]), depth + 1, variant)
        if schema.get("allOf"):
            merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
            for part in schema["allOf"]:
                part = self.resolve(part["$ref"]) if "$ref" in part else part
                merged = _merge(merged, part)
            return self.value(merged, depth + 1, variant)
        kind = _kind(schema)
        if kind == "string":
            return self._string(schema, variant)
        if kind in ("integer", "number"):
            number = self._number(schema) + variant
            return math.ceil(number) if kind == "integer" else number
        if kind == "object":
            return self._object(schema, depth)
        if kind == "array":
            return self._array(schema, depth)
        return False if kind == "boolean" else None

    def resolve(self, ref: str) -> Mapping[str, Any]:
        if not ref.startswith("#"):
            raise ValueError(f"only local $ref is supported, got {ref!r}")
        node: Any = self.root
        for part in ref.lstrip("#").strip("/").split("/"):
            if part:
                node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def _simplest(self, options: list[Any]) -> Any:
        # Prefer a non-null option: a fake answer should exercise the parsing of real content.
        for option in options:
            if isinstance(option, Mapping) and option.get("type") != "null":
                return option
        return options[0]

    def _object(self, schema: Mapping[str, Any], depth: int) -> dict[str, Any]:
        props: Mapping[str, Any] = schema.get("properties") or {}
        required = list(schema.get("required") or [])
        out = {name: self.value(props.get(name, {}), depth + 1) for name in required}
        minimum = int(schema.get("minProperties", 0))
        for name, sub in props.items():
            if len(out) >= minimum:
                break
            out.setdefault(name, self.value(sub, depth + 1))
        return out

    def _array(self, schema: Mapping[str, Any], depth: int) -> list[Any]:
        prefix = list(schema.get("prefixItems") or [])
        items = schema.get("items", {})
        unique = bool(schema.get("uniqueItems"))
        out = []
        for i in range(int(schema.get("minItems", 0))):
            sub = prefix[i] if i < len(prefix) else items
            out.append(self.value(sub, depth + 1, i if unique else 0))
        return out

    def _string(self, schema: Mapping[str, Any], variant: int) -> str:
        fmt = schema.get("format")
        value = _FORMATS.get(fmt, self.text) if isinstance(fmt, str) else self.text
        if variant:
            value = f"{value}-{variant}"
        lo, hi = int(schema.get("minLength", 0)), schema.get("maxLength")
        if len(value) < lo:
            value = value.ljust(lo, "x")
        if hi is not None:
            value = value[: int(hi)]
        return value

    def _number(self, schema: Mapping[str, Any]) -> float:
        low, high = schema.get("minimum"), schema.get("maximum")
        x_low, x_high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
        x_low = None if isinstance(x_low, bool) else x_low  # draft-4 booleans: ignore
        x_high = None if isinstance(x_high, bool) else x_high
        lo = low if low is not None else x_low
        hi = high if high is not None else x_high
        value: float = 0
        if lo is not None and hi is not None:
            value = lo if low is not None else (lo + hi) / 2
        elif lo is not None:
            value = lo if low is not None else lo + 1
        elif hi is not None:
            value = min(0, hi if high is not None else hi - 1)
        step = schema.get("multipleOf")
        if step:
            value = math.ceil(value / step) * step
        return value


def _kind(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        non_null = [k for k in kind if k != "null"]
        kind = non_null[0] if non_null else "null"
    if kind is None:
        if "properties" in schema or "required" in schema:
            return "object"
        if "items" in schema or "prefixItems" in schema:
            return "array"
        return "string"
    if kind not in {"object", "array", "string", "integer", "number", "boolean", "null"}:
        raise ValueError(f"unknown JSON schema type {kind!r}")
    return str(kind)


def _merge(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for key, value in b.items():
        if key == "properties":
            out["properties"] = {**out.get("properties", {}), **value}
        elif key == "required":
            out["required"] = sorted({*out.get("required", []), *value})
        else:
            out.setdefault(key, value)
    return out
