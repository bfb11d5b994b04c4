"""The lines of the memory file that bear on a message, repeated next to it.

The whole file is loaded first in every request; a small model given 7,000 characters of it
answers from the wrong line, or restates the file, more often than it picks the one bullet a
question is about. This picks a few candidate lines by the words they share with the message
(each word weighted by how rare it is in the file) and repeats them, with the headings they
sit under, just before the message. It only points: nothing is dropped from the file, and a
line it misses is still there above.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from reference_memory.cascade_text import words

FOCUS_INTRO = (
    "Lines of your memory (above) that may bear on the next message, with the sections they "
    "are in. Use them only if they answer it; the rest of your memory still counts."
)
_JOINED = re.compile(r"[A-Za-z0-9]+(?:[-_./][A-Za-z0-9]+)+")
_SPLIT = re.compile(r"[-_./]")
_HEADING = re.compile(r"^(#{1,6})\s+(.*\S)\s*$")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_MEMORY = re.compile(r"^<memory>[ \t]*$(.*?)^</memory>", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True)
class MemoryLine:
    place: str  # the headings above the line, outermost first, joined with " › "
    text: str


def terms(text: str) -> set[str]:
    """Content words (reference_memory's own tokenizer), and each joined name's parts too:
    "agent-prod" also gives "agent" and "prod", so either half of a project name finds it."""
    found = set(words(text))
    for joined in _JOINED.findall(text):
        found.update(words(" ".join(_SPLIT.split(joined))))
    return found


def memory_lines(memory: str) -> list[MemoryLine]:
    """Every non-heading line of the memory (between its <memory> tag lines when it has
    them: text around them may name the tags), with the headings above it."""
    inside = _MEMORY.search(memory)
    body = inside.group(1) if inside else memory
    headings: list[tuple[int, str]] = []
    lines: list[MemoryLine] = []
    for raw in body.splitlines():
        heading = _HEADING.match(raw)
        if heading:
            level = len(heading.group(1))
            headings = [(lv, title) for lv, title in headings if lv < level]
            headings.append((level, heading.group(2)))
            continue
        text = _BULLET.sub("", raw).strip()
        if text:
            lines.append(MemoryLine(" › ".join(title for _, title in headings), text))
    return lines


def bearing_lines(memory: str, message: str, limit: int = 5) -> list[MemoryLine]:
    """Up to `limit` lines that share the most rare words with `message` (a line counts its
    headings' words too), each scored Σ log(1 + lines / lines holding the word); only lines
    scoring at least half the best are kept, in file order."""
    lines = memory_lines(memory)
    asked = terms(message)
    if not lines or not asked:
        return []
    held = [terms(f"{line.place} {line.text}") for line in lines]
    holding = Counter(word for line_terms in held for word in line_terms)
    total = len(lines)
    scores = [
        sum(math.log(1 + total / holding[word]) for word in line_terms & asked)
        for line_terms in held
    ]
    best = max(scores)
    if best <= 0:
        return []
    ranked = sorted(
        (i for i, score in enumerate(scores) if score >= best / 2), key=lambda i: -scores[i]
    )
    return [lines[i] for i in sorted(ranked[:limit])]


def focus_note(memory: str | None, message: str, limit: int = 5) -> str | None:
    """The note that repeats the bearing lines, grouped by place; None when none bear."""
    if not memory:
        return None
    picked = bearing_lines(memory, message, limit)
    if not picked:
        return None
    parts = [FOCUS_INTRO]
    place = None
    for line in picked:
        if line.place != place:
            place = line.place
            parts.append(f"{place or '(top of the file)'}:")
        parts.append(f"- {line.text}")
    return "\n".join(parts)
