"""The committed JSON Schema for editors matches the pydantic models."""

from __future__ import annotations

from memeval.scenario.jsonschema import SCHEMA_FILE, render, scenario_json_schema


def test_committed_schema_is_up_to_date() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == render(), (
        "scenarios/scenario.schema.json is stale: run python -m memeval.scenario.jsonschema"
    )


def test_schema_forbids_unknown_keys_and_names_the_question_types() -> None:
    schema = scenario_json_schema()
    assert schema["additionalProperties"] is False
    defs = schema["$defs"]
    assert all(d.get("additionalProperties") is False for d in defs.values() if "properties" in d)
    assert defs["Question"]["properties"]["type"]["enum"] == [
        "memory-dependent",
        "memory-corruptible",
    ]
    assert set(schema["required"]) == {"name", "user", "space"}
