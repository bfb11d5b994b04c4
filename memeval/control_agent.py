"""The `control` agent: answers every question with one of its control answers.

`--agent control:pass` gives each question a `pass` control, `--agent control:fail` a `fail`
one (repeat k uses the k-th, cycling), making the control's tool calls against the session's
fixture tools first. No model is called, so a run exercises the whole grading path — checks,
judge, metrics, report, gate — on answers whose verdict is known, whatever the memory system:
`control:pass` must pass every question and `control:fail` must fail every one. A question
without controls of the asked kind is an agent error (shown as such, never a silent pass).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from typing import Literal

from memeval.agent import AgentResult
from memeval.errors import ConfigError
from memeval.models.base import Message
from memeval.rundir.record import ToolCallRecord
from memeval.scenario.schema import ControlAnswer, ResolvedScenario, TurnSpec
from memeval.tools import FixtureTools

PREFIX = "control:"
KINDS = ("pass", "fail")


def is_control_spec(spec: str | None) -> bool:
    return spec is not None and spec.startswith(PREFIX)


def control_kind(spec: str) -> Literal["pass", "fail"]:
    """`control:pass` -> "pass"; anything else after `control:` is a ConfigError."""
    kind = spec.removeprefix(PREFIX)
    if kind == "pass":
        return "pass"
    if kind == "fail":
        return "fail"
    raise ConfigError(f"--agent {spec!r}: the control agent is control:pass or control:fail")


class ControlAgent:
    """Answers the eval turns of one scenario repeat with their controls. Turns are found by
    their user message; when several eval turns share one, they are answered in order."""

    def __init__(self, scenario: ResolvedScenario, kind: Literal["pass", "fail"], repeat: int = 0):
        self.kind = kind
        self.repeat = repeat
        self._turns: dict[str, list[TurnSpec]] = defaultdict(list)
        for session in scenario.sessions:
            if session.kind == "eval":
                for turn in session.turns:
                    self._turns[turn.user].append(turn)

    async def respond(
        self,
        *,
        history: Sequence[Message],
        user_message: str,
        memory: str | None,
        tools: FixtureTools,
    ) -> AgentResult:
        result = AgentResult(messages=[{"role": "user", "content": user_message}])
        waiting = self._turns.get(user_message)
        if not waiting:
            result.error = "control agent: no eval turn of the scenario asks this message"
            return result
        turn = waiting.pop(0) if len(waiting) > 1 else waiting[0]
        question = turn.question
        answers = question.controls.answers(self.kind) if question and question.controls else []
        if not answers:
            result.error = f"control agent: question {turn.id} has no {self.kind} controls"
            return result
        _play(answers[self.repeat % len(answers)], tools, result)
        return result


def _play(control: ControlAnswer, tools: FixtureTools, result: AgentResult) -> None:
    for i, call in enumerate(control.tool_calls):
        call_id = f"control_{i}"
        output = tools.call(call.name, call.arguments)
        result.tool_calls.append(
            ToolCallRecord(id=call_id, name=call.name, arguments=call.arguments, result=output)
        )
        arguments = json.dumps(call.arguments, ensure_ascii=False)
        function = {"name": call.name, "arguments": arguments}
        result.messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call_id, "type": "function", "function": function}],
            }
        )
        content = json.dumps(output, ensure_ascii=False)
        result.messages.append(
            {"role": "tool", "tool_call_id": call_id, "name": call.name, "content": content}
        )
    result.answer = control.answer
    result.messages.append({"role": "assistant", "content": control.answer})
