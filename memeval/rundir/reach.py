"""Whether a question's facts reached the agent (computed by memeval.grading.served)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Reach = Literal["served", "stored, not served", "not stored", "no tracked fact"]


@dataclass(frozen=True)
class QuestionReach:
    scenario: str
    repeat: int
    turn: str
    question_type: str
    verdict: str  # the question's final verdict
    facts: tuple[str, ...]
    reach: Reach
    missing: tuple[str, ...] = ()  # facts not stored (or stored but not served)

    @property
    def failed(self) -> bool:
        return self.verdict in ("fail", "not-attempted")

    @property
    def stored_not_served(self) -> bool:
        """The failure retrieval memory is known for: the store had it, the agent never saw it."""
        return self.failed and self.reach == "stored, not served"
