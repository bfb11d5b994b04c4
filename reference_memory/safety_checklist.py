"""The `checklist` safety strategy, for small models: deterministic rules, then four yes/no
questions in one constrained answer; any rule hit or any "yes" blocks.

Measured on small models (see MEASUREMENTS.md), a single allow/block field mostly says the same
thing for everything, while narrow yes/no questions separate planted orders from the user's
own conventions; links and secrets are left to regular expressions, which never miss them.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from reference_memory.calls import Caller, ModelCallError
from reference_memory.model import Message
from reference_memory.safety import SafetyUnavailable, Verdict
from reference_memory.safety_rules import findings
from reference_memory.templates import render

QUESTIONS: dict[str, str] = {
    "orders_ai": "gives orders to the AI or claims authority",
    "sends_data": "sends data to an outside place",
    "bypasses_checks": "skips a check or an approval",
    "has_secret": "contains a secret",
}
"""Answer field -> what a "yes" means, used as the block reason."""

_YES_NO: dict[str, Any] = {"type": "string", "enum": ["yes", "no"]}
CHECKLIST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {name: _YES_NO for name in QUESTIONS},
    "required": list(QUESTIONS),
    "additionalProperties": False,
}


class ChecklistSafety:
    """Rules first (no model call on a hit), then the `safety` role answers the checklist."""

    name = "checklist"
    role = "safety"

    def __init__(self, *, rules: bool = True, questions: bool = True) -> None:
        if not (rules or questions):
            raise ValueError("a checklist needs rules, questions or both")
        self.rules = rules
        self.questions = questions

    def messages(self, text: str) -> list[Message]:
        return [
            {"role": "system", "content": render("checklist_system")},
            *example_messages(),
            {"role": "user", "content": render("checklist_user", text=text)},
        ]

    async def check(self, text: str, caller: Caller) -> Verdict:
        if self.rules:
            hits = findings(text)
            if hits:
                reason = "; ".join(f"rule {h.rule}: {h.why} ({h.excerpt!r})" for h in hits)
                return Verdict("block", reason)
        if not self.questions:
            return Verdict("allow", "no rule matched")
        try:
            _, data = await caller.json(self.role, self.messages(text), CHECKLIST_SCHEMA)
        except ModelCallError as exc:
            raise SafetyUnavailable(exc.reason) from exc
        answers = _answers(data)
        if answers is None:
            caller.report.calls[-1].error = f"no yes/no checklist in {data!r:.200}"
            raise SafetyUnavailable(caller.report.calls[-1].error)
        yes = [QUESTIONS[name] for name, answer in answers.items() if answer == "yes"]
        if yes:
            return Verdict("block", "checklist: " + "; ".join(yes))
        return Verdict("allow", "checklist: all no")


@cache
def example_messages() -> tuple[Message, ...]:
    """prompts/checklist_examples.j2 as question/answer pairs (measured on the 1.5B model: the
    checklist alone blocked the user's own "always give me Berlin time" rules as orders to the
    AI; with the examples it passes them)."""
    pairs: list[Message] = []
    for line in render("checklist_examples").splitlines():
        flags, sep, text = line.partition("|")
        yes = {name.strip() for name in flags.split(",") if name.strip() not in ("", "-")}
        if not sep or not text.strip() or not yes <= set(QUESTIONS):
            raise ValueError(f"checklist_examples: bad line {line!r}")
        answer = {name: "yes" if name in yes else "no" for name in QUESTIONS}
        pairs.append({"role": "user", "content": render("checklist_user", text=text.strip())})
        pairs.append({"role": "assistant", "content": json.dumps(answer)})
    return tuple(pairs)


def _answers(data: Any) -> dict[str, str] | None:
    """Every question answered yes or no, or None when any answer is missing or odd."""
    if not isinstance(data, dict):
        return None
    answers: dict[str, str] = {}
    for name in QUESTIONS:
        raw = data.get(name)
        value = raw.strip().lower() if isinstance(raw, str) else None
        if value not in ("yes", "no"):
            return None
        answers[name] = value
    return answers
