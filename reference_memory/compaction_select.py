"""The `select` compactor, for small models: the model classifies parts, code cuts them.

Asked to rewrite a 7,000-character file, the embedded 1.5B model copies it back unchanged, so
the `rewrite` compactor never shortens a file on it. Here the model never writes the file. It
sees the file once, after a static instruction, then answers one constrained question per part
(one growing chat, so a prefix cache serves every question): is this `### ` subsection, then
this line, lasting, done, stale or a repeat? Code removes what it called done, stale or a
repeat, lowest priority first, and stops once the file is under the target:

1. a bullet that repeats an earlier one word for word (code alone, no question);
2. whole `### ` subsections the model calls done or stale (a subsection holding a `[user]`
   line is never offered whole);
3. single lines, those outside `## Goals` first, then goal lines (checkpoints).

Once the file is under the trigger, a run of "lasting" answers (`patience`) ends the search
for the target: the rest would most likely be called lasting too, at one question each.

User Profile lines, `[user]` lines and headings of the six sections are never offered, so the
priority order holds by construction; the result is still checked like a rewrite (sections
kept, shorter, `compaction_rules`). It removes whole lines only: it cannot merge or tighten,
so a file whose removable parts are all lasting stays over the trigger (reported).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reference_memory.calls import Caller, ModelCallError
from reference_memory.compaction import Compactor
from reference_memory.compaction_rules import priority_violation
from reference_memory.document import heading_level, is_bullet, is_user_line
from reference_memory.model import Message
from reference_memory.report import CompactionReport
from reference_memory.templates import render

KINDS = ("lasting", "done", "stale", "repeat")
"""The answer to every question; "lasting" first, the answer when the model is unsure."""
DROPPED = frozenset({"done", "stale", "repeat"})
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"kind": {"type": "string", "enum": list(KINDS)}},
    "required": ["kind"],
    "additionalProperties": False,
}
QUESTIONS = 40
"""Questions per compaction at most (each ≈ 2 s on the embedded model behind the file)."""
PATIENCE = 8
"""Once the file is under the trigger, this many "lasting" answers in a row end the search for
the target: on the embedded model a run of them means the rest will be called lasting too (it
called every single line lasting on the bundled compaction scenario, 30+ questions a time)."""


@dataclass(frozen=True)
class Part:
    """A removable part of the file: a `### ` subsection or one bullet, by raw line index."""

    lines: tuple[int, ...]  # indices into the file's lines; the first is the heading or bullet
    section: str  # the `## ` section it sits in
    whole: bool  # a subsection (heading and body) rather than one bullet


class SelectCompactor(Compactor):
    """Compaction by classification: see the module docstring."""

    def __init__(
        self, *, questions: int = QUESTIONS, patience: int = PATIENCE, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        if questions < 1 or patience < 1:
            raise ValueError(
                f"questions and patience must be at least 1, got {questions} and {patience}"
            )
        self.questions = questions
        self.patience = patience

    async def _shorten(self, text: str, caller: Caller, report: CompactionReport) -> str | None:
        lines = text.splitlines(keepends=True)
        removed: set[int] = set(_repeated_bullets(lines))
        goal = self.target if self.pursue_target else self.trigger
        chat = _Chat(caller, self.role, text, self.target, self.questions)
        report.attempts = 1
        lasting = 0  # "lasting" answers in a row
        why_over = "nothing else was called removable"
        try:
            for part in _offered(lines):
                size = _size(lines, removed)
                if size <= goal:
                    break
                if size <= self.trigger and lasting >= self.patience:
                    why_over = (
                        f"stopped under the trigger after {lasting} parts in a row were lasting"
                    )
                    break
                if removed.intersection(part.lines):
                    continue  # inside a subsection already removed
                if await chat.ask(_question(lines, part)) in DROPPED:
                    removed.update(part.lines)
                    lasting = 0
                else:
                    lasting += 1
        except ModelCallError as exc:
            report.errors.append(f"question {chat.asked}: {exc.reason}")
        except _OutOfQuestions:
            report.errors.append(f"stopped after {self.questions} questions")
        candidate = _without_empty_subsections(lines, removed)
        rejected = self._problem(candidate, text) or priority_violation(text, candidate)
        if rejected:
            report.errors.append(f"attempt 1: {rejected}")
            return None
        if len(candidate) > goal:
            limit = "trigger" if len(candidate) > self.trigger else "target"
            over = f"still {len(candidate)} characters, over the {getattr(self, limit)} {limit}"
            report.errors.append(f"attempt 1: {over} ({why_over})")
        return candidate


class _OutOfQuestions(Exception):
    pass


class _Chat:
    """The static instruction, the file with the first question, then one question per turn."""

    def __init__(self, caller: Caller, role: str, text: str, target: int, limit: int) -> None:
        self.caller, self.role, self.limit = caller, role, limit
        self.text, self.target = text, target
        self.messages: list[Message] = [
            {"role": "system", "content": render("compactor_select_system")}
        ]
        self.asked = 0

    async def ask(self, question: str) -> str:
        if self.asked >= self.limit:
            raise _OutOfQuestions
        self.asked += 1
        if self.asked == 1:
            values = {"size": len(self.text), "target": self.target, "file": self.text.strip()}
            question = render("compactor_select_user", question=question, **values)
        messages = [*self.messages, {"role": "user", "content": question}]
        completion, data = await self.caller.json(self.role, messages, SCHEMA)
        kind = data.get("kind") if isinstance(data, dict) else None
        if not isinstance(kind, str) or kind.strip().lower() not in KINDS:
            reason = f"no valid 'kind' in {completion.text[:120]!r}"
            self.caller.report.calls[-1].error = reason
            raise ModelCallError(self.role, reason, completion.text)
        self.messages = [*messages, {"role": "assistant", "content": completion.text}]
        return kind.strip().lower()


def _question(lines: list[str], part: Part) -> str:
    shown = "".join(lines[i] for i in part.lines).strip()
    if part.whole:
        return (
            f"This subsection of '## {part.section}':\n{shown}\n\n"
            'Is the subsection as a whole lasting, done, stale or a repeat? Answer {"kind": ...}.'
        )
    return (
        f"This line of '## {part.section}':\n{shown}\n\n"
        'Is it lasting, done, stale or a repeat? Answer {"kind": ...}.'
    )


def _offered(lines: list[str]) -> list[Part]:
    """The parts that may go, in the order they are asked about (and so removed)."""
    subsections: list[Part] = []
    outside_goals: list[Part] = []
    goal_lines: list[Part] = []
    section = ""
    current: list[int] | None = None  # the open subsection's line indices

    def close() -> None:
        body = current or []
        if body and not any(is_user_line(lines[i]) for i in body):
            subsections.append(Part(tuple(body), section, whole=True))

    for i, line in enumerate(lines):
        level = heading_level(line)
        if level:
            close()
            current = [i] if level == 3 else None
            if level == 2:
                section = line.strip()[3:].strip()
            continue
        if current is not None:
            current.append(i)
        if not is_bullet(line) or is_user_line(line) or section == "User Profile":
            continue
        (goal_lines if section == "Goals" else outside_goals).append(
            Part((i,), section, whole=False)
        )
    close()
    return [*subsections, *outside_goals, *goal_lines]


def _repeated_bullets(lines: list[str]) -> list[int]:
    """Bullets that repeat an earlier bullet word for word (ignoring case and spacing)."""
    seen: set[str] = set()
    repeats: list[int] = []
    for i, line in enumerate(lines):
        if not is_bullet(line):
            continue
        key = " ".join(line.split()).casefold()
        if key in seen:
            repeats.append(i)
        seen.add(key)
    return repeats


def _without_empty_subsections(lines: list[str], removed: set[int]) -> str:
    """The kept lines; a `### ` heading left with nothing under it goes too."""
    kept = [i for i in range(len(lines)) if i not in removed]
    out: list[str] = []
    for n, i in enumerate(kept):
        if heading_level(lines[i]) == 3:
            body = [lines[j] for j in kept[n + 1 :]]
            following = next((b for b in body if b.strip()), "")
            if not following or heading_level(following):
                continue
        out.append(lines[i])
    return "".join(out).strip() + "\n"


def _size(lines: list[str], removed: set[int]) -> int:
    return sum(len(line) for i, line in enumerate(lines) if i not in removed)
