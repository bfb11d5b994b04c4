"""`fake` gives schema-valid JSON for a wide range of schemas, deterministically, labelled fake."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from memeval.models.accounting import RecordingModel
from memeval.models.base import CallRecord
from memeval.models.fake import FakeModel
from memeval.models.synth import synthesize

SCHEMAS: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "bounded string": {"type": "string", "minLength": 12, "maxLength": 14},
    "short string": {"type": "string", "maxLength": 3},
    "formats": {
        "type": "object",
        "properties": {
            k: {"type": "string", "format": k} for k in ("date", "date-time", "email", "uri")
        },
        "required": ["date", "date-time", "email", "uri"],
    },
    "integer bounds": {"type": "integer", "minimum": 3, "maximum": 9},
    "exclusive number": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    "multiple of": {"type": "integer", "minimum": 7, "multipleOf": 5},
    "negative max": {"type": "integer", "maximum": -4},
    "boolean": {"type": "boolean"},
    "null": {"type": "null"},
    "nullable": {"type": ["string", "null"]},
    "enum": {"enum": ["allow", "block"]},
    "const": {"const": 42},
    "safety verdict": {
        "type": "object",
        "properties": {
            "verdict": {"type": "string", "enum": ["allow", "block"]},
            "reason": {"type": "string"},
        },
        "required": ["verdict", "reason"],
        "additionalProperties": False,
    },
    "edit ops": {
        "type": "object",
        "properties": {
            "ops": {
                "type": "array",
                "items": {
                    "anyOf": [
                        {
                            "type": "object",
                            "properties": {
                                "op": {"const": "add"},
                                "anchor": {"enum": ["## Goals", "## Projects"]},
                                "text": {"type": "string"},
                            },
                            "required": ["op", "anchor", "text"],
                            "additionalProperties": False,
                        },
                        {
                            "type": "object",
                            "properties": {
                                "op": {"const": "replace"},
                                "old": {"type": "string"},
                                "new": {"type": "string"},
                            },
                            "required": ["op", "old", "new"],
                            "additionalProperties": False,
                        },
                    ]
                },
                "minItems": 2,
            }
        },
        "required": ["ops"],
    },
    "unique enum items": {
        "type": "array",
        "items": {"enum": ["a", "b", "c"]},
        "minItems": 3,
        "uniqueItems": True,
    },
    "unique strings": {
        "type": "array",
        "items": {"type": "string"},
        "minItems": 3,
        "uniqueItems": True,
    },
    "refs": {
        "$defs": {
            "fact": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            }
        },
        "type": "object",
        "properties": {
            "facts": {"type": "array", "items": {"$ref": "#/$defs/fact"}, "minItems": 1}
        },
        "required": ["facts"],
    },
    "allOf": {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
            {"properties": {"b": {"type": "boolean"}}, "required": ["b"]},
        ]
    },
    "oneOf prefers non-null": {"oneOf": [{"type": "null"}, {"type": "integer", "minimum": 1}]},
    "min properties": {
        "type": "object",
        "properties": {"x": {"type": "string"}, "y": {"type": "string"}},
        "minProperties": 1,
    },
    "tuple": {
        "type": "array",
        "prefixItems": [{"type": "integer"}, {"type": "string"}],
        "minItems": 2,
    },
    "empty": {},
}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
async def test_fake_answers_are_valid_for_every_schema(name: str) -> None:
    schema = SCHEMAS[name]
    response = await FakeModel().chat([{"role": "user", "content": name}], schema=schema)
    jsonschema.validate(json.loads(response.content or ""), schema)


def test_the_edit_ops_schema_gets_real_items() -> None:
    ops = synthesize(SCHEMAS["edit ops"])["ops"]
    assert len(ops) == 2 and ops[0]["op"] == "add" and ops[0]["anchor"] == "## Goals"


async def test_deterministic_and_instant() -> None:
    messages = [{"role": "user", "content": "same"}]
    first = await FakeModel().chat(messages, schema=SCHEMAS["safety verdict"])
    second = await FakeModel().chat(messages, schema=SCHEMAS["safety verdict"])
    other = await FakeModel().chat([{"role": "user", "content": "other"}], schema=SCHEMAS["string"])
    assert first.content == second.content
    assert json.loads(other.content or "") != json.loads(first.content or "")
    assert first.latency_s < 0.05


async def test_tools_without_schema_give_plain_text_labelled_fake() -> None:
    tools = [{"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}]
    response = await FakeModel().chat([{"role": "user", "content": "hi"}], tools=tools)
    assert response.tool_calls == []
    assert response.content and "not a model" in response.content
    assert response.model == "fake"
    assert (response.prompt_tokens, response.completion_tokens) == (0, 0)


async def test_accounting_marks_fake_calls() -> None:
    sink: list[CallRecord] = []
    await RecordingModel(FakeModel(), "judge", sink).chat([{"role": "user", "content": "q"}])
    assert sink[0].fake is True and sink[0].model == "fake" and sink[0].cost_usd is None


def test_unsupported_schemas_fail_loudly() -> None:
    with pytest.raises(ValueError, match="unknown JSON schema type"):
        synthesize({"type": "tuple"})
    with pytest.raises(ValueError, match="local \\$ref"):
        synthesize({"$ref": "https://example.com/schema.json"})
    recursive = {
        "$defs": {
            "n": {"type": "object", "properties": {"n": {"$ref": "#/$defs/n"}}, "required": ["n"]}
        },
        "$ref": "#/$defs/n",
    }
    with pytest.raises(ValueError, match="too deeply"):
        synthesize(recursive)
