"""A line diff of the memory file (difflib), shaped for the report's colored diff view.

Unchanged stretches collapse to a few lines of context; a changed line paired with its
replacement also carries character-level segments so a small edit stands out in a long line.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["ctx", "add", "del", "gap"]


@dataclass
class Segment:
    text: str
    changed: bool


@dataclass
class DiffLine:
    kind: Kind
    text: str = ""
    old_no: int | None = None
    new_no: int | None = None
    segments: list[Segment] = field(default_factory=list)  # empty: render `text` whole


@dataclass
class FileDiff:
    lines: list[DiffLine]
    added: int = 0
    removed: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed)


def file_diff(before: str, after: str, context: int = 2) -> FileDiff:
    """Diff two versions of the file line by line, keeping `context` lines around changes."""
    old, new = before.splitlines(), after.splitlines()
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    out: list[DiffLine] = []
    added = removed = 0
    for group in matcher.get_grouped_opcodes(context):
        first = group[0]
        if out or first[1] > 0:
            out.append(DiffLine("gap", f"⋯ line {first[1] + 1}"))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(
                    DiffLine("ctx", old[i], old_no=i + 1, new_no=j1 + k + 1)
                    for k, i in enumerate(range(i1, i2))
                )
                continue
            removed += i2 - i1
            added += j2 - j1
            if tag == "replace" and i2 - i1 == j2 - j1:
                for k in range(i2 - i1):
                    del_line, add_line = _paired(old[i1 + k], new[j1 + k], i1 + k + 1, j1 + k + 1)
                    out.extend((del_line, add_line))
                continue
            out.extend(DiffLine("del", old[i], old_no=i + 1) for i in range(i1, i2))
            out.extend(DiffLine("add", new[j], new_no=j + 1) for j in range(j1, j2))
    return FileDiff(out, added=added, removed=removed)


def _paired(a: str, b: str, old_no: int, new_no: int) -> tuple[DiffLine, DiffLine]:
    """A replaced line and its replacement, with the differing characters marked."""
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if matcher.ratio() < 0.5:  # mostly rewritten: marking characters would only add noise
        return DiffLine("del", a, old_no=old_no), DiffLine("add", b, new_no=new_no)
    old_segs: list[Segment] = []
    new_segs: list[Segment] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if i2 > i1:
            old_segs.append(Segment(a[i1:i2], tag != "equal"))
        if j2 > j1:
            new_segs.append(Segment(b[j1:j2], tag != "equal"))
    return (
        DiffLine("del", a, old_no=old_no, segments=old_segs),
        DiffLine("add", b, new_no=new_no, segments=new_segs),
    )
