"""The compaction priority order, checked in code rather than only asked for in the prompt.

Compaction keeps, first to last: the User Profile (and active goals), `[user]` lines, goal
checkpoints, everything else. A result that lost a User Profile line or a `[user]` line while a
lower-priority line survived broke that order: it cut the wrong line first. Rewording is not
loss: a line counts as kept when one line of the result (of the same class) carries all of its
numbers and most of its content words, so merged and tightened bullets pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reference_memory.document import is_bullet, is_user_line, parse

KEEP_SHARE = 0.6  # of a line's content words a rewording must still carry
_WORD = re.compile(r"[a-z]{3,}")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_STOP = frozenset(
    {"and", "are", "for", "from", "has", "have", "its", "that", "the", "their", "this"}
    | {"was", "were", "will", "with", "user"}
)


@dataclass(frozen=True)
class Line:
    text: str
    section: str  # the `## ` section it sits in ("" before the first)

    @property
    def high(self) -> bool:
        """User Profile lines and [user] lines: the two classes compaction must not cut first."""
        return self.section == "User Profile" or is_user_line(self.text)


def bullets(text: str) -> list[Line]:
    """Every bullet line of a file with the section it belongs to."""
    lines: list[Line] = []
    for sec in parse(text):
        for raw in sec.body.splitlines():
            if is_bullet(raw):
                lines.append(Line(raw.strip(), sec.title))
    return lines


def priority_violation(before: str, after: str) -> str | None:
    """Why `after` breaks the priority order against `before`, or None when it keeps it."""
    kept_lines = bullets(after)
    lost = [line for line in bullets(before) if line.high and not _covered(line, kept_lines)]
    if not lost:
        return None
    lower_kept = [line for line in kept_lines if not line.high]
    survivors = [line for line in bullets(before) if not line.high and _covered(line, lower_kept)]
    if not survivors:
        return None
    kind = "a User Profile line" if lost[0].section == "User Profile" else "a [user] line"
    return (
        f"it dropped {kind} ({_short(lost[0].text)}) but kept a lower-priority line "
        f"({_short(survivors[0].text)}); cut or merge lower-priority lines first and keep "
        "every [user] line and the User Profile"
    )


def _covered(line: Line, candidates: list[Line]) -> bool:
    words, numbers = _content_words(line.text), set(_NUMBER.findall(line.text))
    for other in candidates:
        if is_user_line(line.text) and not is_user_line(other.text):
            continue  # a [user] fact restated without its tag lost its confidence
        if not numbers <= set(_NUMBER.findall(other.text)):
            continue
        theirs = _content_words(other.text)
        if not words or len(words & theirs) / len(words) >= KEEP_SHARE:
            return True
    return False


def _content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.casefold()) if w not in _STOP}


def _short(text: str, limit: int = 70) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")
