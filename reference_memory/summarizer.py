"""Step 1: summarize a completed turn — user messages, replies, and every tool call and result."""

from __future__ import annotations

import json
from typing import Any

from reference_memory.calls import Caller
from reference_memory.model import Message
from reference_memory.templates import render
from reference_memory.turn import Turn

TOOL_RESULT_LIMIT = 2000
"""Characters kept from each tool result; the head holds what matters and the prompt stays small."""


class Summarizer:
    """Asks the `summarizer` role for a short summary of one turn."""

    role = "summarizer"

    def __init__(self, tool_result_limit: int = TOOL_RESULT_LIMIT) -> None:
        self.tool_result_limit = tool_result_limit

    def messages(self, turn: Turn) -> list[Message]:
        transcript = _clip_tool_results(turn, self.tool_result_limit).render()
        return [
            {"role": "system", "content": render("summarizer_system")},
            {"role": "user", "content": render("summarizer_user", transcript=transcript)},
        ]

    async def summarize(self, turn: Turn, caller: Caller) -> str:
        """The summary text; raises ModelCallError when the call fails."""
        completion = await caller.text(self.role, self.messages(turn))
        return completion.text.strip()


def _clip_tool_results(turn: Turn, limit: int) -> Turn:
    messages: list[Message] = []
    for message in turn.messages:
        content: Any = message.get("content")
        if message.get("role") == "tool" and not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False, default=str)
        if message.get("role") == "tool" and len(content) > limit:
            omitted = len(content) - limit
            message = {**message, "content": f"{content[:limit]} [... {omitted} chars omitted]"}
        messages.append(message)
    return Turn(messages=messages, completed=turn.completed)
