"""Where a `cascade` fact goes in the file, and the edit operations that put it there.

Code, not the model, picks every anchor: a new line goes at the end of its section (a goal
checkpoint right after the goal it measures), a changed value replaces its old line. Anchors
are lines of the file as it was before the turn, so blocking one operation at the safety gate
never strands another.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reference_memory.cascade_text import numbers, overlap
from reference_memory.document import USER_TAG, count, is_bullet, section
from reference_memory.edits import EditError, EditOp
from reference_memory.updater import check_batch

SAME_SHARE = 0.85
"""A new fact whose words are this much inside one existing line (numbers included) is a
duplicate, decided without asking the model."""
RELATED_WORDS, RELATED_SHARE = 3, 0.25
"""An existing bullet of the fact's own section is asked about (same fact, changed value, or
different) when it shares this many content words and this share of the words of both; or,
for short lines, two words and 40% of the words of either ("Give times in Berlin time")."""


@dataclass(frozen=True)
class Fact:
    """One fact to keep: its text (no bullet, no tag), whether the user said it, its section."""

    text: str
    user: bool
    section: str
    progress: bool = False  # a result measured against a goal: goes under that goal

    @property
    def line(self) -> str:
        return f"- {USER_TAG} {self.text}" if self.user else f"- {self.text}"


def section_lines(file: str, title: str) -> list[str]:
    """The non-blank lines of a `## ` section, heading excluded."""
    found = section(file, title)
    return [line for line in found.body.splitlines() if line.strip()] if found else []


def bullets(file: str) -> list[str]:
    return [line for line in file.splitlines() if is_bullet(line)]


def duplicate_of(fact: str, lines: list[str]) -> str | None:
    """The line that already says `fact` (its words and every number), or None."""
    for line in lines:
        _, share = overlap(fact, line)
        if share >= SAME_SHARE and numbers(fact) <= numbers(line):
            return line
    return None


def related(fact: Fact, file: str, limit: int = 2, anywhere: bool = False) -> list[str]:
    """Bullets of the fact's section (of any section with `anywhere`) that may say the same
    thing or an older value of it, closest first. A fact found by a tool is never set against a
    [user] line: what the user said stands until the user says otherwise."""
    scored = []
    for line in bullets(file) if anywhere else section_lines(file, fact.section):
        if not is_bullet(line) or (not fact.user and USER_TAG in line):
            continue
        shared, share = overlap(fact.text, line)
        _, back = overlap(line, fact.text)
        close = (shared >= RELATED_WORDS and min(share, back) >= RELATED_SHARE) or (
            shared >= 2 and max(share, back) >= 0.4
        )
        if close and count(file, line) == 1:
            scored.append((shared, share, line))
    scored.sort(key=lambda item: (-item[0], -item[1]))
    return [line for _, _, line in scored[:limit]]


def _usable(file: str, line: str, avoid: set[str]) -> bool:
    return bool(line.strip()) and line not in avoid and count(file, line) == 1


def end_anchor(file: str, title: str, avoid: set[str]) -> str | None:
    """The last line of the section usable as an anchor, else its heading (None: no section)."""
    for line in reversed(section_lines(file, title)):
        if _usable(file, line, avoid):
            return line
    heading = f"## {title}"
    return heading if _usable(file, heading, avoid) else None


def goal_anchor(file: str, fact: str, avoid: set[str]) -> str | None:
    """The last line of the goal block that `fact` measures (best word overlap), so checkpoints
    stay in order under their goal; the end of Goals when no goal matches."""
    lines = section_lines(file, "Goals")
    best, best_shared = -1, 0
    for i, line in enumerate(lines):
        shared, _ = overlap(fact, line)
        if shared > best_shared:
            best, best_shared = i, shared
    if best < 0:
        return end_anchor(file, "Goals", avoid)
    end = best
    for j in range(best + 1, len(lines)):
        if lines[j].startswith("#") or USER_TAG in lines[j]:
            break
        end = j
    for line in reversed(lines[best : end + 1]):
        if _usable(file, line, avoid):
            return line
    return end_anchor(file, "Goals", avoid)


@dataclass
class Plan:
    """The facts decided for one turn, turned into edit operations on `file`."""

    file: str
    replaces: list[tuple[str, Fact]] = field(default_factory=list)  # (old line, new fact)
    adds: list[Fact] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """Lines this plan will bring in (to catch a duplicate within the same turn)."""
        return [fact.line for _, fact in self.replaces] + [fact.line for fact in self.adds]

    def ops(self) -> list[EditOp]:
        """Replacements first, then adds grouped by anchor (reversed, so each group ends up in
        the order the facts came); an op that still will not apply is re-anchored on its
        section heading, then dropped with a note."""
        replaced = {old for old, _ in self.replaces}
        ops = [EditOp.replace(old, fact.line) for old, fact in self.replaces]
        groups: dict[str, list[Fact]] = {}
        for fact in self.adds:
            anchor = self._anchor(fact, replaced)
            if anchor is None:
                self.notes.append(f"no place for {fact.line!r}: section {fact.section!r} missing")
                continue
            groups.setdefault(anchor, []).append(fact)
        for anchor, facts in groups.items():
            ops.extend(EditOp.add(anchor, fact.line) for fact in reversed(facts))
        return self._repair(ops)

    def _anchor(self, fact: Fact, replaced: set[str]) -> str | None:
        if fact.progress:
            return goal_anchor(self.file, fact.text, replaced)
        return end_anchor(self.file, fact.section, replaced)

    def _repair(self, ops: list[EditOp]) -> list[EditOp]:
        for _ in range(len(ops) + 1):
            try:
                check_batch(self.file, ops)
                return ops
            except EditError as exc:
                bad = ops[exc.index]
                fixed = self._reanchored(bad)
                if fixed is not None and fixed != bad:
                    ops[exc.index] = fixed
                else:
                    self.notes.append(f"dropped {bad.to_dict()}: {exc.reason}")
                    del ops[exc.index]
        return []

    def _reanchored(self, op: EditOp) -> EditOp | None:
        if op.op != "add":
            return None
        fact = next((f for f in self.adds if f.line == op.text), None)
        heading = f"## {fact.section}" if fact else None
        if heading and count(self.file, heading) == 1 and op.anchor != heading:
            return EditOp.add(heading, op.text)
        return None
