"""A completed agent turn, as the pipeline receives it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from reference_memory.model import Message


@dataclass
class Turn:
    """One turn in OpenAI chat format: user message(s), assistant replies, tool calls/results.

    `messages` holds only the turn itself (not earlier history, not the injected memory).
    Assistant tool calls use {"role": "assistant", "tool_calls": [{"id", "type": "function",
    "function": {"name", "arguments": <JSON string>}}]} and results
    {"role": "tool", "tool_call_id", "name", "content"}. A turn paused for approval has
    `completed=False`; the pipeline does not learn from it.
    """

    messages: list[Message] = field(default_factory=list)
    completed: bool = True

    def called_tools(self) -> bool:
        """Whether the agent called a tool in this turn (a call, or a tool's result)."""
        return any(m.get("role") == "tool" or m.get("tool_calls") for m in self.messages)

    def tools_all_failed(self) -> bool:
        """Whether tools answered this turn and every answer was an error ({"error": ...})."""
        results = [m.get("content") for m in self.messages if m.get("role") == "tool"]
        return bool(results) and all(_is_error(r) for r in results)

    def user_messages(self) -> list[str]:
        return [str(m.get("content") or "") for m in self.messages if m.get("role") == "user"]

    def projects(self) -> list[str]:
        """The `project` arguments of the turn's tool calls, first seen first."""
        found: list[str] = []
        for m in self.messages:
            for call in m.get("tool_calls") or []:
                arguments = _loaded(call.get("function", {}).get("arguments"))
                name = arguments.get("project") if isinstance(arguments, dict) else None
                if isinstance(name, str) and name.strip() and name.strip() not in found:
                    found.append(name.strip())
        return found

    def render(self) -> str:
        """A plain-text transcript of the whole turn, tool calls and results included."""
        lines: list[str] = []
        for m in self.messages:
            role = m.get("role")
            if role == "user":
                lines.append(f"USER: {m.get('content') or ''}")
            elif role == "assistant":
                if m.get("content"):
                    lines.append(f"ASSISTANT: {m['content']}")
                for call in m.get("tool_calls") or []:
                    fn = call.get("function", {})
                    lines.append(f"TOOL CALL {fn.get('name')}: {_compact(fn.get('arguments'))}")
            elif role == "tool":
                lines.append(f"TOOL RESULT {m.get('name') or ''}: {_compact(m.get('content'))}")
        return "\n".join(lines)


def _loaded(value: Any) -> Any:
    """A tool result as data: a string holding JSON is parsed, any other string kept."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _is_error(content: Any) -> bool:
    content = _loaded(content)
    return isinstance(content, dict) and "error" in content


def _compact(value: Any) -> str:
    loaded = _loaded(value)
    if loaded is value and isinstance(value, str):  # not JSON: shown as it came
        return value
    return json.dumps(loaded, ensure_ascii=False, separators=(",", ":"))
