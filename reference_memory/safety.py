"""Step 3: the safety gate classifies every piece of new text before it is saved.

Memory is injected into every future session, so a poisoned line is a persistent prompt
injection. A gate that cannot decide (error, timeout, unparseable answer) raises
`SafetyUnavailable` and the pipeline skips the whole write. `SafetyStrategy` is the extension
point; this module ships the `classifier` strategy (one allow/block JSON answer per text).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from reference_memory.calls import Caller, ModelCallError
from reference_memory.model import Message
from reference_memory.templates import render

# The reason's bound, in characters: with the verdict before it, a reason this long fits the
# safety role's 120 tokens (DEFAULT_MAX_TOKENS), so a model that runs on inside its reason
# still gives a verdict, where the string would otherwise be cut off and the gate fail. A
# grammar-constrained back end closes the string at the bound; another may ignore it.
REASON_CHARS = 300

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["allow", "block"]},
        "reason": {"type": "string", "maxLength": REASON_CHARS},
    },
    "required": ["verdict", "reason"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Verdict:
    verdict: Literal["allow", "block"]
    reason: str = ""

    @property
    def allowed(self) -> bool:
        return self.verdict == "allow"


class SafetyUnavailable(Exception):
    """The gate could not classify the text; nothing may be written."""


@runtime_checkable
class SafetyStrategy(Protocol):
    name: str

    async def check(self, text: str, caller: Caller) -> Verdict:
        """Allow or block one piece of text; raise SafetyUnavailable when undecidable."""
        ...


class ClassifierSafety:
    """The `classifier` strategy: the `safety` role answers {"verdict", "reason"} per text."""

    name = "classifier"
    role = "safety"

    def messages(self, text: str) -> list[Message]:
        return [
            {"role": "system", "content": render("safety_system")},
            {"role": "user", "content": render("safety_user", text=text)},
        ]

    async def check(self, text: str, caller: Caller) -> Verdict:
        try:
            _, data = await caller.json(self.role, self.messages(text), VERDICT_SCHEMA)
        except ModelCallError as exc:
            raise SafetyUnavailable(exc.reason) from exc
        raw = data.get("verdict") if isinstance(data, dict) else None
        verdict = raw.strip().lower() if isinstance(raw, str) else None
        if verdict != "allow" and verdict != "block":
            caller.report.calls[-1].error = f"no allow/block verdict in {data!r:.200}"
            raise SafetyUnavailable(caller.report.calls[-1].error)
        reason = data.get("reason")
        return Verdict("allow" if verdict == "allow" else "block", str(reason or ""))
