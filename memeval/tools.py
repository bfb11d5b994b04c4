"""Fixture tools: a scenario's canned tool results, served to the live agent, beside the tools
a memory system offers (a `search_memory`, for core-search)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memeval.errors import ConfigError
from memeval.scenario.schema import Tool


@dataclass(frozen=True)
class MemoryTool:
    """A tool a memory system offers the agent: an OpenAI function spec and a handler that
    takes the parsed arguments and returns a JSON-able result (never raises: errors are
    results the agent sees)."""

    spec: Mapping[str, Any]  # {"type": "function", "function": {"name", "description", ...}}
    call: Callable[[Mapping[str, Any]], Any]

    @property
    def name(self) -> str:
        return str(self.spec["function"]["name"])


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

    def __init__(self, tools: Sequence[Tool], memory: Sequence[MemoryTool] = ()) -> None:
        self._tools = {tool.name: tool for tool in tools}
        self._memory = {tool.name: tool for tool in memory}
        clash = sorted(set(self._tools) & set(self._memory))
        if clash:
            raise ConfigError(
                f"the scenario's tool {clash[0]!r} has the name of a tool the memory system "
                "offers; rename the scenario's tool"
            )

    @property
    def names(self) -> list[str]:
        return [*self._tools, *self._memory]

    def specs(self) -> list[dict[str, Any]]:
        """OpenAI function-calling specs for the model (the memory system's tools last)."""
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
        ] + [dict(tool.spec) for tool in self._memory.values()]

    def call(self, name: str, arguments: Mapping[str, Any] | str | None) -> Any:
        """The canned result for a call; never raises (errors are results the agent sees)."""
        tool = self._tools.get(name)
        if tool is None and name not in self._memory:
            return {"error": f"unknown tool {name!r}; available tools: {', '.join(self.names)}"}
        args = _parse_arguments(arguments)
        if args is None:
            return {"error": f"arguments for {name} must be a JSON object"}
        if tool is None:
            return _call_memory_tool(self._memory[name], args)
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


def _call_memory_tool(tool: MemoryTool, args: dict[str, Any]) -> Any:
    """A memory system's tool; a handler that raises gives the agent an error result."""
    try:
        return tool.call(args)
    except Exception as exc:
        return {"error": f"{tool.name} failed: {type(exc).__name__}: {exc}"}
