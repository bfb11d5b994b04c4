"""The memory file: its fixed skeleton, size limits, and read-only structure helpers.

One markdown file per (user, space). Six `## ` sections in a fixed order; individual goals and
projects are `### ` subsections; a line the user stated directly is a bullet tagged `[user]`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SECTIONS = (
    "User Profile",
    "Goals",
    "Projects",
    "Assets",
    "Conventions",
    "Interaction corrections",
)
HEADINGS = tuple(f"## {name}" for name in SECTIONS)

SKELETON = "\n\n".join(HEADINGS) + "\n"
"""The empty file: the six section headings, a blank line between them."""

CAP = 8000
"""The store rejects any file longer than this (characters)."""
TRIGGER = 7000
"""Compaction runs when a file grows past this."""
TARGET = 6000
"""Compaction aims for at most this."""

USER_TAG = "[user]"
_USER_LINE = re.compile(r"^\s*[-*+]\s+\[user\]", re.IGNORECASE)


@dataclass
class Section:
    """A `## ` section or `### ` subsection, located by character offsets into the file."""

    title: str
    level: int
    start: int  # offset of the heading line
    end: int  # offset just past the section's last character
    body: str  # the text after the heading line, up to `end`
    subsections: list[Section] = field(default_factory=list)

    @property
    def size(self) -> int:
        return self.end - self.start


def parse(text: str) -> list[Section]:
    """Split a file into its `## ` sections, each with its `### ` subsections."""
    sections: list[Section] = []
    offset = 0
    for line in text.splitlines(keepends=True):
        level = heading_level(line)
        if level == 2:
            sections.append(_open(line, offset, 2))
        elif level == 3 and sections:
            sections[-1].subsections.append(_open(line, offset, 3))
        offset += len(line)
    for i, sec in enumerate(sections):
        sec.end = sections[i + 1].start if i + 1 < len(sections) else len(text)
        _close(text, sec)
        for j, sub in enumerate(sec.subsections):
            nxt = sec.subsections[j + 1].start if j + 1 < len(sec.subsections) else sec.end
            sub.end = nxt
            _close(text, sub)
    return sections


def section(text: str, title: str) -> Section | None:
    """The `## ` section with this title (case-insensitive), or None."""
    wanted = title.strip().lower()
    return next((s for s in parse(text) if s.title.lower() == wanted), None)


def missing_sections(text: str) -> list[str]:
    """Skeleton headings absent from the file or out of order (empty list: structure intact)."""
    titles = [s.title for s in parse(text)]
    missing: list[str] = []
    position = -1
    for name in SECTIONS:
        found = next((i for i, t in enumerate(titles) if i > position and t == name), None)
        if found is None:
            missing.append(name)
        else:
            position = found
    return missing


def section_sizes(text: str) -> dict[str, int]:
    """Characters per `## ` section, heading included (text before the first section is `""`)."""
    sizes: dict[str, int] = {}
    sections = parse(text)
    preamble = sections[0].start if sections else len(text)
    if preamble:
        sizes[""] = preamble
    for sec in sections:
        sizes[sec.title] = sizes.get(sec.title, 0) + sec.size
    return sizes


def is_bullet(line: str) -> bool:
    """True for a markdown list item: `- `, `* ` or `+ ` after any indentation."""
    return line.lstrip().startswith(("- ", "* ", "+ "))


def is_user_line(line: str) -> bool:
    """True for a bullet recording something the user stated directly: `- [user] ...`."""
    return bool(_USER_LINE.match(line))


def user_lines(text: str) -> list[str]:
    """Every `[user]` bullet in the file, in order, without its line break."""
    return [line for line in text.splitlines() if is_user_line(line)]


def count(text: str, needle: str) -> int:
    """Occurrences of `needle` in `text`, overlapping ones included (an anchor must be unique)."""
    if not needle:
        return 0
    n, pos = 0, text.find(needle)
    while pos != -1:
        n += 1
        pos = text.find(needle, pos + 1)
    return n


def unique_lines(text: str) -> list[str]:
    """Non-blank lines that occur exactly once in the file: every one is a valid anchor."""
    seen: set[str] = set()
    result: list[str] = []
    for line in text.splitlines():
        if line.strip() and line not in seen and count(text, line) == 1:
            result.append(line)
        seen.add(line)
    return result


def heading_level(line: str) -> int:
    """2 for a `## ` section heading, 3 for a `### ` subsection heading, 0 otherwise."""
    if line.startswith("### "):
        return 3
    if line.startswith("## "):
        return 2
    return 0


def _open(line: str, offset: int, level: int) -> Section:
    title = line[level + 1 :].strip()
    return Section(title=title, level=level, start=offset, end=offset, body="")


def _close(text: str, sec: Section) -> None:
    newline = text.find("\n", sec.start, sec.end)
    sec.body = text[newline + 1 : sec.end] if newline != -1 else ""
