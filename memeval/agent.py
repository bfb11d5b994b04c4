"""The agent extension point and the built-in tool-calling chat agent."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Protocol, runtime_checkable

from memeval.models.base import ChatModel, Message, ReplyError, ToolChoice
from memeval.rundir.record import ToolCallRecord
from memeval.tools import FixtureTools

DEFAULT_MAX_TOOL_ROUNDS = 4
CALL_FAILED_NOTE = (
    "Your last tool call could not be read, so it did not run and there is no result from it. "
    "Answer now without it: say plainly what you could not do, and do not say it was done."
)

# What makes a message need a tool before any answer, read from its wording alone: a clause
# that opens with an action (after "please", "can you"...), or a question about live data
# (what happened today, in the last 24 hours, the most recent run). Memory holds what was
# true when it was written; neither an action nor the current state can come from it.
_POLITE = r"(?:(?:please|also|now|then|so|and|ok(?:ay)?|can you|could you|would you|will you)\s+)*"
_ACTION = re.compile(
    rf"^{_POLITE}(?:make|run|re-?run|rebuild|create|build|pull|fetch|export|delete|remove|add"
    r"|update|sample|label|set up|schedule|generate|start|cancel|score|evaluate)\b",
    re.IGNORECASE,
)
_LIVE = re.compile(
    r"\b(?:today|tonight|yesterday|overnight|so far|right now|currently"
    r"|this (?:week|month|morning)|(?:last|past) \d+ (?:hours?|days?|weeks?)"
    r"|most recent|latest|last \w+ (?:action|run|trace|span)s?)\b",
    re.IGNORECASE,
)
_FROM_MEMORY = re.compile(
    r"\bfrom what (?:you|we|I)(?:'ve| have)? (?:already )?(?:know|knew|found|recorded|noted|have)\b"
    r"|\bno (?:need to |new )(?:run|re-?run|open|look|check|call|pull|quer|fetch)"
    r"|\b(?:without|don't|do not) (?:run|open|look|check|call|pull|quer|fetch)"
    r"|\bremind me\b"
    r"|\b(?:we|you|I)(?:'ve| have)? (?:recorded|noted|agreed on|decided)\b"
    r"|\b(?:did|have) (?:we|you|I) (?:record|note|agree|decide)\b",
    re.IGNORECASE,
)
_ADVICE = re.compile(
    r"\bshould\b|\b(?:would|do|can) you (?:recommend|suggest|advise)\b", re.IGNORECASE
)
_COUNT = re.compile(r"\bhow (?:many|much)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_CLAUSE = re.compile(r"[,:;.!?\n]+")


def answers_from_memory(message: str) -> bool:
    """Whether `message` asks to be answered from what is already known ("from what you
    already know", "no new runs", "remind me", "what we recorded"): then no tool is offered."""
    return bool(_FROM_MEMORY.search(message.replace("’", "'")))


def asks_advice(message: str) -> bool:
    """Whether `message` asks what should be done ("Which span should it run on?", "Anything
    I should know first?", "What would you recommend?"): a plan or an opinion is asked for,
    which comes from what is known, and any action waits for the user's answer to it. A
    question that also asks how many or how much ("How many spans are there, and how big
    should the dataset be?") asks for data as well, and is not advice alone."""
    return any(
        sentence.rstrip().endswith("?") and _ADVICE.search(sentence) and not _COUNT.search(sentence)
        for sentence in _SENTENCE.findall(message.replace("’", "'"))
    )


def needs_tool_first(message: str) -> bool:
    """Whether `message` asks for an action or for live data, so that the first reply must be
    a tool call rather than an answer from memory. A question about live data always does;
    an action does unless the message also asks how it should be done ("Set up the eval.
    Which span should it use?"): then the answer is the plan, before anything is done."""
    for sentence in _SENTENCE.findall(message):
        asked = sentence.rstrip().endswith("?") or re.search(r"\bI need\b", sentence)
        if asked and _LIVE.search(sentence):
            return True
    if asks_advice(message):
        return False
    return any(_ACTION.match(clause.strip()) for clause in _CLAUSE.split(message))


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
    user's message (static text first so prefix caches serve every call).

    When `tool_first(user_message)` says the message asks for an action or live data, the
    first reply must be a tool call (`tool_choice="required"`) and the next one is the answer,
    with no call allowed (`tool_choice="none"`): a small model otherwise answers such a
    message from memory, and left free after a forced call it tends to repeat calls until its
    rounds run out. When `from_memory(user_message)` says the user asked for an answer from
    what is already known, the only round is the answer, with no call allowed: a small model
    free to call tools calls them anyway and answers from a live number instead of the
    recorded one. When `advice(user_message)` says the message asks what should be done, the
    answer is likewise the only round: a small model free to call tools acts instead of
    advising (it creates the dataset it was asked how to set up). The tools stay listed in
    every request, the answer round included, so a back end's prefix cache serves what the
    earlier rounds evaluated; a model that calls in the answer round anyway is asked once
    more without tools. Otherwise the model chooses, for up to `max_tool_rounds` rounds of
    calls. `None` turns any of the rules off; `tool_first` wins when it applies ("Make the
    dataset from what we already found"), and it already yields to a question of how an
    action should be done (`needs_tool_first`).

    A call round whose reply cannot be used (ReplyError: a call cut off or repeating itself)
    is followed at once by the answer round, with the tools and results the turn already
    holds and CALL_FAILED_NOTE at the end of the request (not of the turn's messages): the
    turn gets an answer to grade, one that does not claim the failed call ran, and the failed
    call stays in the turn's model calls, where the report shows it. A failed answer round,
    or any other failure, is the turn's error."""

    def __init__(
        self,
        model: ChatModel,
        *,
        system_prompt: str | None = None,
        max_tool_rounds: int = DEFAULT_MAX_TOOL_ROUNDS,
        max_tokens: int = 512,
        tool_first: Callable[[str], bool] | None = needs_tool_first,
        from_memory: Callable[[str], bool] | None = answers_from_memory,
        advice: Callable[[str], bool] | None = asks_advice,
    ) -> None:
        self.model = model
        self.system_prompt = system_prompt or default_system_prompt()
        self.max_tool_rounds = max_tool_rounds
        self.max_tokens = max_tokens
        self.tool_first = tool_first
        self.from_memory = from_memory
        self.advice = advice

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
        forced = bool(specs) and self.tool_first is not None and self.tool_first(user_message)
        if forced:
            rounds = 1
        elif self._answer_only(user_message):
            rounds = 0  # the only round is the answer: tools listed, no call allowed
        else:
            rounds = self.max_tool_rounds
        notes: list[Message] = []  # request-only: never in the turn's messages
        try:
            round_no = 0
            while True:
                last_round = round_no >= rounds
                try:
                    reply = await self.model.chat(
                        [*prefix, *history, *turn, *notes],
                        tools=specs or None,
                        max_tokens=self.max_tokens,
                        tool_choice=_choice(bool(specs), forced, round_no, last_round),
                    )
                except ReplyError:
                    if last_round:
                        raise
                    rounds = round_no = round_no + 1  # answer now, with what the turn holds
                    notes = [{"role": "system", "content": CALL_FAILED_NOTE}]
                    continue
                if last_round and reply.tool_calls:  # a model that does not honour "none"
                    reply = await self.model.chat(
                        [*prefix, *history, *turn, *notes], max_tokens=self.max_tokens
                    )
                if not reply.tool_calls or last_round:
                    result.answer = (reply.content or "").strip()
                    turn.append({"role": "assistant", "content": result.answer})
                    return result
                round_no += 1
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

    def _answer_only(self, user_message: str) -> bool:
        return any(
            rule is not None and rule(user_message) for rule in (self.from_memory, self.advice)
        )


def _choice(tools_given: bool, forced: bool, round_no: int, last_round: bool) -> ToolChoice:
    """A forced call first; the answer round keeps the tools in the request but may not call
    them ("none"), so the prefix the calls before it evaluated is reused, not evaluated anew."""
    if not tools_given:
        return "auto"
    if last_round:
        return "none"
    return "required" if forced and round_no == 0 else "auto"


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
