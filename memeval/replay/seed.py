"""A seed turn's scripted transcript as the messages an agent would have produced."""

from __future__ import annotations

import json

from memeval.models.base import Message
from memeval.rundir.record import ToolCallRecord
from memeval.scenario.schema import TurnSpec


def seed_messages(turn: TurnSpec, index: int) -> tuple[list[Message], list[ToolCallRecord]]:
    """A seed turn's scripted transcript as OpenAI-format messages."""
    messages: list[Message] = [{"role": "user", "content": turn.user}]
    calls: list[ToolCallRecord] = []
    for step_no, step in enumerate(turn.transcript):
        if step.tool_call is not None:
            call_id = f"call_{index}_{step_no}"
            name = str(step.tool_call.get("name", ""))
            arguments = step.tool_call.get("arguments") or {}
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": json.dumps(arguments)},
                        }
                    ],
                }
            )
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call_id,
                    "name": name,
                    "content": json.dumps(step.result, ensure_ascii=False),
                }
            )
            calls.append(
                ToolCallRecord(id=call_id, name=name, arguments=arguments, result=step.result)
            )
        if step.assistant is not None:
            messages.append({"role": "assistant", "content": step.assistant})
    return messages, calls
