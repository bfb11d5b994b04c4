"""Fixture tools: a scenario's canned tool results, served to the live agent."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from memeval.scenario.schema import Tool


def _matches(expected: Any, actual: Any) -> bool:
    """`when` matching: every key given in `when` must equal the argument (strings compare
    case-insensitively and ignore surrounding whitespace; nested dicts match recursively)."""
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return False
        return all(key in actual and _matches(val, actual[key]) for key, val in expected.items())
    if isinstance(expected, str) and isinstance(actual, str):
        return expected.strip().casefold() == actual.strip().casefold()
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return float(expected) == float(actual)
    return bool(expected == actual)


class FixtureTools:
    """The tools a live turn may call, answering from their `responses`: the first `when`
    that matches the arguments, else `default`, else a clear tool error."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self._tools = {tool.name: tool for tool in tools}

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> list[dict[str, Any]]:
        """OpenAI function-calling specs for the model."""
        return [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters or {"type": "object", "properties": {}},
                },
            }
            for tool in self._tools.values()
        ]

    def call(self, name: str, arguments: Mapping[str, Any] | str | None) -> Any:
        """The canned result for a call; never raises (errors are results the agent sees)."""
        tool = self._tools.get(name)
        if tool is None:
            return {"error": f"unknown tool {name!r}; available tools: {', '.join(self.names)}"}
        args = _parse_arguments(arguments)
        if args is None:
            return {"error": f"arguments for {name} must be a JSON object"}
        default: Any = None
        has_default = False
        for response in tool.responses:
            if response.when is not None:
                if _matches(response.when, args):
                    return response.result
            elif "default" in response.model_fields_set and not has_default:
                default, has_default = response.default, True
        if has_default:
            return default
        return {"error": f"{name}: no result for arguments {json.dumps(args, sort_keys=True)}"}


def _parse_arguments(arguments: Mapping[str, Any] | str | None) -> dict[str, Any] | None:
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    return dict(arguments) if isinstance(arguments, Mapping) else None
