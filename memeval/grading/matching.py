"""The one place scenario patterns are matched, and where a fact is judged to hold in a file.

A pattern is a plain string (case-insensitive substring) or `/.../` (a case-insensitive
regular expression). Checks, retention and culprit search all use these helpers, so a fact
is "present" by exactly the same rule everywhere.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from memeval.errors import ScenarioError
from memeval.scenario.schema import Fact

USER_LINE = re.compile(r"^\s*(?:[-*+]\s+)?\[user\]", re.IGNORECASE)


@functools.lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """`/re/` compiles as a regex, anything else as an escaped literal; both ignore case."""
    if len(pattern) >= 2 and pattern.startswith("/") and pattern.endswith("/"):
        try:
            return re.compile(pattern[1:-1], re.IGNORECASE)
        except re.error as exc:
            raise ScenarioError(
                f"pattern {pattern!r} is not a valid regular expression ({exc}); "
                "write a plain substring or a valid /regex/"
            ) from exc
    return re.compile(re.escape(pattern), re.IGNORECASE)


def search(pattern: str, text: str) -> re.Match[str] | None:
    return compile_pattern(pattern).search(text)


def find(pattern: str, text: str) -> str | None:
    """The text `pattern` matched in `text`, or None."""
    found = search(pattern, text)
    return found.group(0) if found else None


def excerpt(text: str, found: re.Match[str], width: int = 40) -> str:
    """The match with a little context either side, on one line."""
    start, end = max(0, found.start() - width), min(len(text), found.end() + width)
    body = " ".join(text[start:end].split())
    return ("…" if start else "") + body + ("…" if end < len(text) else "")


def matches(pattern: str, text: str) -> bool:
    return find(pattern, text) is not None


def find_any(patterns: list[str], text: str) -> tuple[str, str] | None:
    """(pattern, matched text) for the first of `patterns` found in `text`."""
    for pattern in patterns:
        hit = find(pattern, text)
        if hit is not None:
            return pattern, hit
    return None


def section_of_lines(text: str) -> list[tuple[str, str | None]]:
    """Each line with the `## ` section it sits in (### subsections belong to their `## `)."""
    current: str | None = None
    out: list[tuple[str, str | None]] = []
    for line in text.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
        out.append((line, current))
    return out


@dataclass(frozen=True)
class FactCheck:
    """Whether a fact holds in a file; `line` is the line that holds it (or the closest miss)."""

    holds: bool
    line: str = ""
    why: str = ""  # for a miss: what was wrong


def check_fact(fact: Fact, text: str) -> FactCheck:
    """A fact holds when a line matches one of its patterns, on a `[user]` line when the fact
    is user-tagged, inside its `## ` section when it names one."""
    near_miss: FactCheck | None = None
    for line, section in section_of_lines(text):
        if find_any(fact.match, line) is None:
            continue
        if fact.user_tagged and not USER_LINE.match(line):
            near_miss = near_miss or FactCheck(False, line, "found, but not on a [user] line")
            continue
        if fact.section and (section or "").casefold() != fact.section.casefold():
            where = f"## {section}" if section else "no section"
            near_miss = near_miss or FactCheck(
                False, line, f"found under {where}, not ## {fact.section}"
            )
            continue
        return FactCheck(True, line.strip())
    if near_miss is not None:
        return FactCheck(False, near_miss.line.strip(), near_miss.why)
    return FactCheck(False, "", f"none of {fact.match} found")
