"""Step 4: rewrite a file that grew past the trigger toward the target size.

Ingestion never compresses, so any turn may push the file past 7,000 characters. Then the
`compactor` role rewrites it toward 6,000, keeping (in priority order) User Profile and active
Goals, `[user]` lines, then goal checkpoints. Up to 3 attempts while the result is still over
the trigger (and, with `pursue_target`, while it is still over the target), each one shortening
the best valid version so far. A version that breaks the priority order in code
(`compaction_rules`) is rejected and the model is asked again with the exact reason, like an
edit batch. An attempt whose request would repeat the last answered one word for word (the
same rejection of the same file) is not made: at temperature 0 the model, or the response
cache, would give the same answer again. The chosen version is checked whole by the safety
gate; `[user]` lines that did not survive word for word are reported.
"""

from __future__ import annotations

from dataclasses import dataclass

from reference_memory.calls import Caller, ModelCallError, strip_fence
from reference_memory.compaction_rules import priority_violation
from reference_memory.document import CAP, TARGET, TRIGGER, missing_sections, user_lines
from reference_memory.model import Message
from reference_memory.report import CompactionReport, SafetyVerdict
from reference_memory.safety import SafetyStrategy
from reference_memory.templates import render


@dataclass
class CompactionOutcome:
    report: CompactionReport
    text: str | None = None  # the accepted compacted file
    safety_unavailable: str | None = None  # set when the gate could not run: skip the write


class Compactor:
    role = "compactor"

    def __init__(
        self,
        *,
        attempts: int = 3,
        trigger: int = TRIGGER,
        target: int = TARGET,
        cap: int = CAP,
        pursue_target: bool = True,
    ) -> None:
        if attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {attempts}")
        self.attempts, self.trigger, self.target, self.cap = attempts, trigger, target, cap
        self.pursue_target = (
            pursue_target  # shorten again when a version lands in (target, trigger]
        )

    def needed(self, text: str) -> bool:
        return len(text) > self.trigger

    def messages(self, text: str, attempt: int, rejected: str | None = None) -> list[Message]:
        values = {"size": len(text), "target": self.target, "trigger": self.trigger}
        user = render("compactor_user", file=text, attempt=attempt, rejected=rejected, **values)
        return [
            {"role": "system", "content": render("compactor_system")},
            {"role": "user", "content": user},
        ]

    async def compact(self, text: str, caller: Caller, safety: SafetyStrategy) -> CompactionOutcome:
        report = CompactionReport(before_chars=len(text), after_chars=len(text), text_before=text)
        best = await self._shorten(text, caller, report)
        outcome = CompactionOutcome(report)
        if best is None:
            return outcome
        report.after_chars = len(best)
        if len(best) > self.cap:
            report.errors.append(f"best version is {len(best)} characters, over the {self.cap} cap")
            return outcome
        try:
            verdict = await safety.check(best, caller)
        except Exception as exc:  # any gate failure means nothing may be written
            caller.report.safety.append(SafetyVerdict(best, "error", str(exc)))
            report.errors.append(f"safety gate unavailable: {exc}")
            outcome.safety_unavailable = str(exc)
            return outcome
        caller.report.safety.append(SafetyVerdict(best, verdict.verdict, verdict.reason))
        if not verdict.allowed:
            caller.report.blocked.append(best)
            report.errors.append(f"safety gate blocked the compacted file: {verdict.reason}")
            return outcome
        report.accepted = True
        report.text_after = best
        report.reached_target = len(best) <= self.target
        report.user_lines_lost = lost_user_lines(text, best)
        outcome.text = best
        return outcome

    async def _shorten(self, text: str, caller: Caller, report: CompactionReport) -> str | None:
        """The shortest valid version the model produced, or None."""
        best: str | None = None
        source = text
        rejected: str | None = None
        answered: list[Message] | None = None  # the last request the model answered
        for attempt in range(1, self.attempts + 1):
            messages = self.messages(source, attempt, rejected)
            if messages == answered:
                report.errors.append(
                    f"attempt {attempt}: not made, its request would repeat attempt "
                    f"{attempt - 1}'s word for word"
                )
                break
            report.attempts = attempt
            try:
                completion = await caller.text(self.role, messages)
            except ModelCallError as exc:  # a failed call may be asked again as it was
                report.errors.append(f"attempt {attempt}: {exc.reason}")
                continue
            answered = messages
            candidate = strip_fence(completion.text).strip() + "\n"
            rejected = self._problem(candidate, text) or priority_violation(text, candidate)
            if rejected:
                report.errors.append(f"attempt {attempt}: {rejected}")
                continue
            if best is None or len(candidate) < len(best):
                best = source = candidate
            if len(candidate) <= (self.target if self.pursue_target else self.trigger):
                break
            limit = "trigger" if len(candidate) > self.trigger else "target"
            over = f"still {len(candidate)} characters, over the {getattr(self, limit)} {limit}"
            report.errors.append(f"attempt {attempt}: {over}")
        return best

    @staticmethod
    def _problem(candidate: str, original: str) -> str | None:
        missing = missing_sections(candidate)
        if missing and not missing_sections(original):
            return f"section '## {missing[0]}' is missing or out of order"
        if len(candidate) >= len(original):
            return f"not shorter ({len(candidate)} characters from {len(original)})"
        return None


def lost_user_lines(before: str, after: str) -> list[str]:
    """`[user]` lines of `before` with no equal line (ignoring case and spacing) in `after`."""
    kept = {_normal(line) for line in user_lines(after)}
    return [line for line in user_lines(before) if _normal(line) not in kept]


def _normal(line: str) -> str:
    return " ".join(line.split()).casefold()
