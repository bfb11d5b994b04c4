"""The JSON Schema of scenario files, for editors (scenarios/scenario.schema.json).

Regenerate after changing schema.py: `python -m memeval.scenario.jsonschema`. A test keeps
the committed file equal to what this module generates. Cross-reference rules (known facts,
tools, sessions) are the loader's; the schema covers shapes and keys.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from memeval.scenario.schema import Scenario

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "scenarios" / "scenario.schema.json"


def scenario_json_schema() -> dict[str, Any]:
    schema = Scenario.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "memeval scenario",
        **{k: v for k, v in schema.items() if k != "title"},
    }


def render() -> str:
    return json.dumps(scenario_json_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> None:
    target = Path(argv[0]) if argv else SCHEMA_FILE
    target.write_text(render(), encoding="utf-8")
    print(f"wrote {target}")


if __name__ == "__main__":
    main(sys.argv[1:])
