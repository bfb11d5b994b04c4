"""The agent extension point and the built-in tool-calling chat agent."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Protocol, runtime_checkable

from memeval.models.base import ChatModel, Message
from memeval.rundir.record import ToolCallRecord
from memeval.tools import FixtureTools

DEFAULT_MAX_TOOL_ROUNDS = 4


@dataclass
class AgentResult:
    """One live turn: its messages (user first, then assistant/tool messages), the final
    answer, every tool call with its result, and the error if the agent failed."""

    messages: list[Message] = field(default_factory=list)
    answer: str = ""
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    error: str | None = None


@runtime_checkable
class Agent(Protocol):
    async def respond(
        self,
        *,
        history: Sequence[Message],
        user_message: str,
        memory: str | None,
        tools: FixtureTools,
    ) -> AgentResult:
        """Answer `user_message` given this session's history and the injected memory.
        `memory` goes into the request only; it must never appear in the returned messages."""
        ...


def default_system_prompt() -> str:
    return resources.files("memeval.prompts").joinpath("agent_system.j2").read_text("utf-8")


class ChatAgent:
    """A tool-calling chat agent: static instructions, then memory, then history, then the
    user's message (static text first so prefix caches serve every call)."""

    def __init__(
        self,
        model: ChatModel,
        *,
        system_prompt: str | None = None,
        max_tool_rounds: int = DEFAULT_MAX_TOOL_ROUNDS,
        max_tokens: int = 512,
    ) -> None:
        self.model = model
        self.system_prompt = system_prompt or default_system_prompt()
        self.max_tool_rounds = max_tool_rounds
        self.max_tokens = max_tokens

    async def respond(
        self,
        *,
        history: Sequence[Message],
        user_message: str,
        memory: str | None,
        tools: FixtureTools,
    ) -> AgentResult:
        prefix: list[Message] = [{"role": "system", "content": self.system_prompt}]
        if memory:
            prefix.append({"role": "system", "content": memory})
        turn: list[Message] = [{"role": "user", "content": user_message}]
        result = AgentResult(messages=turn)
        specs = tools.specs()
        try:
            for round_no in range(self.max_tool_rounds + 1):
                last_round = round_no == self.max_tool_rounds
                reply = await self.model.chat(
                    [*prefix, *history, *turn],
                    tools=None if last_round or not specs else specs,
                    max_tokens=self.max_tokens,
                )
                if not reply.tool_calls or last_round:
                    result.answer = (reply.content or "").strip()
                    turn.append({"role": "assistant", "content": result.answer})
                    return result
                turn.append(_assistant_tool_message(reply.content, reply.tool_calls))
                for call in reply.tool_calls:
                    output = tools.call(call.name, call.arguments)
                    result.tool_calls.append(
                        ToolCallRecord(
                            id=call.id, name=call.name, arguments=call.arguments, result=output
                        )
                    )
                    turn.append(
                        {
                            "role": "tool",
                            "tool_call_id": call.id,
                            "name": call.name,
                            "content": json.dumps(output, ensure_ascii=False),
                        }
                    )
        except Exception as exc:  # a failed model call is recorded, never a crashed run
            result.error = f"{type(exc).__name__}: {exc}"
        return result


def _assistant_tool_message(content: str | None, calls: Sequence[Any]) -> Message:
    return {
        "role": "assistant",
        "content": content or None,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for call in calls
        ],
    }
