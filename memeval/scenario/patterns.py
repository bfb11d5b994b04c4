"""Match patterns as scenarios write them: plain text, or `/regex/`.

Plain strings are case-insensitive substrings; a string that starts and ends with `/` is a
case-insensitive regular expression (memeval.grading.matching applies them). Here: catch
patterns that cannot work before a run starts.
"""

from __future__ import annotations

import re


def is_regex(pattern: str) -> bool:
    return len(pattern) >= 2 and pattern.startswith("/") and pattern.endswith("/")


def pattern_problem(pattern: str) -> str | None:
    """Why a pattern can never work as intended, or None when it is fine."""
    if not pattern.strip():
        return "empty pattern (it would match any text)"
    if is_regex(pattern):
        body = pattern[1:-1]
        if not body:
            return "empty regex '//' (it would match any text)"
        try:
            re.compile(body, re.IGNORECASE)
        except re.error as exc:
            return f"invalid regex {pattern!r}: {exc}"
    return None
