"""Where a `cascade` fact goes in the file, and the edit operations that put it there.

Code, not the model, picks every anchor: a new line goes at the end of the `### ` subsection the
conversation names, else at the end of its section, or above the first subsection when the
section has them (so it never reads as the last subsection's); a goal checkpoint goes right after
the goal it measures; a new goal opens a `### ` subsection of its own, and so does a project the
turn's tools worked on when the user (or the finding itself) names it; a changed value replaces
its old line. Anchors are lines of the file as it was before the turn, so blocking one
operation at the safety gate never strands another.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from reference_memory.cascade_text import PHRASING, numbers, overlap, words
from reference_memory.document import USER_TAG, count, heading_level, is_bullet, section
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
    title: str = ""  # the `### ` heading it goes under (a new goal's, or its project's)

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


PROJECT_NAME = re.compile(r"[A-Za-z0-9][\w.-]{0,59}")
"""A project name that may head a subsection: one identifier, no spaces or markup."""


def turn_project(projects: list[str], said: str) -> str:
    """The one of a turn's tool `project` arguments that `said` names ("" when none or several
    are): said by the user, it is the turn's project; said by a finding, that finding's. An
    argument nobody names is the agent's guess, and a wrong guess would file the turn's facts
    under another project."""
    heard = set(words(said))
    named = []
    for name in projects:
        tokens = words(name)  # one word, as the user's message is split into words
        if PROJECT_NAME.fullmatch(name) and len(tokens) == 1 and tokens[0] in heard:
            named.append(name)
    return named[0] if len(named) == 1 else ""


def _usable(file: str, line: str, avoid: set[str]) -> bool:
    return bool(line.strip()) and line not in avoid and count(file, line) == 1


def end_anchor(file: str, title: str, avoid: set[str]) -> str | None:
    """The last line of the section usable as an anchor, else its heading (None: no section)."""
    for line in reversed(section_lines(file, title)):
        if _usable(file, line, avoid):
            return line
    heading = f"## {title}"
    return heading if _usable(file, heading, avoid) else None


def lead_anchor(file: str, title: str, avoid: set[str]) -> str | None:
    """Where a line no subsection claims goes in a section that has subsections: after the
    section's own lines, above its first `### ` heading (the end of the section otherwise)."""
    lines = section_lines(file, title)
    first = next((i for i, line in enumerate(lines) if heading_level(line) == 3), None)
    if first is None:
        return end_anchor(file, title, avoid)
    heading = f"## {title}"
    return _last_usable(file, [heading, *lines[:first]], avoid)


def _last_usable(file: str, lines: list[str], avoid: set[str]) -> str | None:
    return next((line for line in reversed(lines) if _usable(file, line, avoid)), None)


def goal_blocks(file: str) -> list[list[str]]:
    """The goals of the Goals section, each as its lines: a `### ` heading and what follows it,
    or (before the first heading) a `[user]` line and the checkpoints under it."""
    blocks: list[list[str]] = []
    headed = False
    for line in section_lines(file, "Goals"):
        starts = heading_level(line) == 3 or (not headed and USER_TAG in line)
        headed = headed or heading_level(line) == 3
        if starts or not blocks:
            blocks.append([line])
        else:
            blocks[-1].append(line)
    return blocks


def goal_anchor(file: str, fact: str, avoid: set[str], fallback: bool = True) -> str | None:
    """The last line of the goal that `fact` measures (the block holding the line of best word
    overlap), so checkpoints stay in order under their goal; when no goal shares a word, the
    end of Goals (None without `fallback`)."""
    best: list[str] = []
    best_shared = 0
    for block in goal_blocks(file):
        shared = max(overlap(fact, line)[0] for line in block)
        if shared > best_shared:
            best, best_shared = block, shared
    found = _last_usable(file, best, avoid)
    return found if found or not fallback else end_anchor(file, "Goals", avoid)


def subsections(file: str, title: str) -> list[tuple[str, list[str]]]:
    """The `### ` subsections of a `## ` section: (heading line, its non-blank lines)."""
    out: list[tuple[str, list[str]]] = []
    for line in section_lines(file, title):
        if heading_level(line) == 3:
            out.append((line, []))
        elif out:
            out[-1][1].append(line)
    return out


def _naming_words(headings: list[str]) -> list[set[str]]:
    """Per heading, its words no other heading has ("Book agent: hallucination under 10%" and
    "Assistant: rejection rate under 8%" share nothing that tells them apart but their
    subjects); words with digits (targets, quarters) and the words that phrase a goal ("get",
    "reach", "before") never name a subject."""
    sets = [
        {
            w
            for w in words(h.lstrip("#"))
            if len(w) > 2 and w not in PHRASING and not any(c.isdigit() for c in w)
        }
        for h in headings
    ]
    return [mine - set().union(*sets[:i], *sets[i + 1 :]) for i, mine in enumerate(sets)]


def named_subsection(file: str, title: str, text: str) -> str | None:
    """The heading of the one `### ` subsection of `title` that `text` names (a word of its
    heading that no sibling heading has), or None when none or several are named."""
    found = subsections(file, title)
    heard = set(words(text))
    named = [
        heading
        for (heading, _), own in zip(found, _naming_words([h for h, _ in found]), strict=True)
        if own & heard
    ]
    return named[0] if len(named) == 1 else None


def under_other_subsection(file: str, line: str, text: str) -> bool:
    """True when `line` sits in a Goals `### ` subsection that `text` does not name while it
    names nothing, or names another: a goal said in that conversation is another subject's
    ("get it under 8%"). Project lines are always compared: a user restating a project's fact
    seldom names the project."""
    heading = heading_above(file, line)
    title = section_title_above(file, line)
    if heading is None or title != "Goals":
        return False
    found = subsections(file, title)
    own = dict(zip([h for h, _ in found], _naming_words([h for h, _ in found]), strict=True))
    return bool(own.get(heading)) and not own[heading] & set(words(text))


def heading_above(file: str, line: str) -> str | None:
    """The `### ` heading of the subsection holding `line` (None: not in one)."""
    current = None
    for candidate in file.splitlines():
        level = heading_level(candidate)
        if level:
            current = candidate if level == 3 else None
        elif candidate == line:
            return current
    return None


def section_title_above(file: str, line: str) -> str | None:
    """The title of the `## ` section holding `line`."""
    current = None
    for candidate in file.splitlines():
        if heading_level(candidate) == 2:
            current = candidate[3:].strip()
        elif candidate == line:
            return current
    return None


@dataclass
class Plan:
    """The facts decided for one turn, turned into edit operations on `file`."""

    file: str
    replaces: list[tuple[str, Fact]] = field(default_factory=list)  # (old line, new fact)
    adds: list[Fact] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    context: str = ""  # what the user said this turn: names the subsection a fact belongs to
    _sections: dict[str, str] = field(default_factory=dict)  # add text -> its section

    def lines(self) -> list[str]:
        """Lines this plan will bring in (to catch a duplicate within the same turn)."""
        return [fact.line for _, fact in self.replaces] + [fact.line for fact in self.adds]

    def ops(self) -> list[EditOp]:
        """Replacements first, then adds grouped by anchor (reversed, so each group ends up in
        the order the facts came, a new subsection after the lines that join the one above
        it); an op that still will not apply is re-anchored on its section heading, then
        dropped with a note."""
        replaced = {old for old, _ in self.replaces}
        ops = [EditOp.replace(old, fact.line) for old, fact in self.replaces]
        under = self._checkpoints_of_new_goals()
        routed = {i for checkpoints in under.values() for i in checkpoints}
        plain: dict[str, list[str]] = {}
        opening: dict[str, list[str]] = {}
        self._sections.clear()
        checkpoint = None  # where this turn's last checkpoint went
        for i, fact in enumerate(self.adds):
            if i in routed:
                continue
            anchor = self._anchor(fact, replaced)
            if fact.progress:
                # "The cost is speed: p50 3.1 s -> 4.0 s" names no goal: it goes with the
                # checkpoint reported before it
                matched = goal_anchor(self.file, fact.text, replaced, fallback=False)
                anchor = matched or checkpoint or anchor
                checkpoint = anchor
            if anchor is None:
                self.notes.append(f"no place for {fact.line!r}: section {fact.section!r} missing")
                continue
            lines = [fact.line] + [self.adds[j].line for j in under.get(i, [])]
            opens = bool(fact.title) and self._heading(fact) is None
            text = "\n".join([f"### {fact.title}"] * opens + lines)
            (opening if opens else plain).setdefault(anchor, []).append(text)
            self._sections[text] = fact.section
        for anchor in dict.fromkeys([*plain, *opening]):
            texts = plain.get(anchor, []) + opening.get(anchor, [])
            ops.extend(EditOp.add(anchor, text) for text in reversed(texts))
        return self._repair(ops)

    def _checkpoints_of_new_goals(self) -> dict[int, list[int]]:
        """Lines that join a new subsection, by the index of its first line: a checkpoint
        reported on the turn that states a new goal is measured against it, and a later fact
        of the turn given the same title and section belongs under the same heading."""
        out: dict[int, list[int]] = {}
        titles: dict[tuple[str, str], int] = {}
        goal: int | None = None
        for i, fact in enumerate(self.adds):
            if fact.title:
                first = titles.setdefault((fact.section, fact.title.casefold()), i)
                if first != i:
                    out.setdefault(first, []).append(i)
                if fact.section == "Goals":
                    goal = first
            elif fact.progress and goal is not None:
                out.setdefault(goal, []).append(i)
        return out

    def _heading(self, fact: Fact) -> str | None:
        """The existing heading a fact's title repeats (its line goes under it)."""
        wanted = f"### {fact.title}".casefold()
        found = subsections(self.file, fact.section) if fact.title else []
        return next((h for h, _ in found if h.casefold() == wanted), None)

    def _anchor(self, fact: Fact, replaced: set[str]) -> str | None:
        if fact.progress:
            return goal_anchor(self.file, fact.text, replaced)
        heading = self._heading(fact)
        if heading is None and not fact.title:
            heading = named_subsection(self.file, fact.section, self.context + "\n" + fact.text)
        if heading is not None:
            lines = dict(subsections(self.file, fact.section))[heading]
            return _last_usable(self.file, [heading, *lines], replaced)
        if fact.title:  # a new subsection: at the end of its section
            return end_anchor(self.file, fact.section, replaced)
        return lead_anchor(self.file, fact.section, replaced)

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
        title = self._sections.get(op.text)
        heading = f"## {title}" if title else None
        if heading and count(self.file, heading) == 1 and op.anchor != heading:
            return EditOp.add(heading, op.text)
        return None
