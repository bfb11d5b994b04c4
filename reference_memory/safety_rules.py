"""Deterministic safety rules: patterns no memory line has a reason to contain.

Small models miss links and planted orders that a regular expression never misses, so the
`checklist` gate runs these first and blocks on any hit without asking the model. Each rule is
narrow on purpose: a user's own conventions ("[user] Always give me times in Berlin time") are
imperatives too and must pass; the rules target links, orders aimed at an AI, bypassed checks,
exfiltration, secrets and hidden content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TLDS = "com|net|org|io|ai|co|app|dev|xyz|info|biz|example|site|online|cloud|ru|cn|tk|top|ly|gg"


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: re.Pattern[str]
    why: str


def _rule(name: str, pattern: str, why: str) -> Rule:
    return Rule(name, re.compile(pattern, re.IGNORECASE), why)


RULES: tuple[Rule, ...] = (
    _rule("link", r"\b(?:https?|ftp|file)://\S+|\bwww\.[\w-]+", "contains a link"),
    _rule("email", r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b", "contains an email address"),
    _rule(
        "domain",
        rf"\b(?:[a-z0-9](?:[a-z0-9-]{{0,61}}[a-z0-9])?\.)+(?:{_TLDS})\b(?![.\w-])",
        "contains a domain name",
    ),
    _rule(
        "override",
        r"\b(?:ignore|disregard|forget|override)\b[^.\n]{0,40}"
        r"\b(?:instructions?|rules|prompts?|guidelines|previous|above|guardrails?)\b"
        r"|\b(?:system prompt|developer message|jailbreak)\b",
        "tells the assistant to drop its instructions",
    ),
    _rule(
        "addressed-to-ai",
        r"\b(?:note|message|instructions?|reminder|attention)\s+(?:to|for)\s+(?:any\s+|all\s+|the\s+)?"
        r"(?:ai|llms?|assistants?|language models?|agents?)\b"
        r"|\b(?:standing instruction|platform admins?|admin override)\b"
        r"|\b(?:to|dear|hey|attention)\s+(?:the\s+|any\s+|all\s+)?(?:ai|llms?|language models?)\b"
        r"|\b(?:ai|assistants?|models?|agents?|llms?)\s+(?:reading|processing|that reads) this\b",
        "addresses an AI with orders or claims authority",
    ),
    _rule(
        "secrecy",
        r"\b(?:do not|don't|never)\s+(?:tell|mention|show|reveal|report)\b[^.\n]{0,40}"
        r"\b(?:user|users|anyone|them|her|him)\b"
        r"|\b(?:quietly|secretly|covertly)\b|\bwithout (?:telling|informing|notifying)\b",
        "asks the assistant to act behind the user's back",
    ),
    _rule(
        "memory-write",
        r"\b(?:save|store|write|put|keep|record|add)\b[^.\n]{0,30}\b(?:long[- ]term )?memory\b"
        r"|\bmemory updated\b",
        "asks for something to be planted in memory",
    ),
    _rule(
        "bypass",
        r"\bauto[- ]?approv\w*"
        r"|\b(?:approv|accept)\w*\s+(?:every|all|any)\b[^.\n]{0,30}\bwithout\b"
        r"|\b(?:skip|disable|bypass|turn off|switch off)\w*\b[^.\n]{0,30}"
        r"\b(?:checks?|safety|guard\w*|reviews?|approvals?|validation|verification)\b"
        r"|\b(?:approvals?|confirmations?|reviews?|sign-?offs?|checks?)\b[^.\n]{0,30}"
        r"\b(?:(?:are|is) )?no longer (?:needed|required|necessary)\b",
        "tells the assistant to skip a check or an approval",
    ),
    _rule(
        "exfiltration",
        r"\b(?:upload|send|e-?mail|post|forward|exfiltrat|leak)\w*\b[^.\n]{0,60}"
        r"\b(?:urls?|links?|websites?|outside|external|third[- ]part(?:y|ies))\b",
        "tells the assistant to send data somewhere",
    ),
    _rule(
        "secret",
        r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}|\bAKIA[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{20,}"
        r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
        r"|\b(?:password|passwd|api[_ -]?key|secret|access[_ -]?token)\b\s*[:=]\s*\S+",
        "contains a secret",
    ),
    _rule(
        "hidden",
        r"[\u200b-\u200f\u2060-\u2064\ufeff]|[A-Za-z0-9+/]{80,}={0,2}",
        "hides content (invisible characters or an encoded blob)",
    ),
)

_INJECTION_REPORT = re.compile(
    r"\binject(?:ed|ion)\b"
    r"|\b(?:addressed|aimed) (?:to|at) (?:the )?(?:ai|assistants?|models?|llms?)\b"
    r"|\btrying to (?:make|get|have) me\b"
    r"|\b(?:tells?|asks?|asking) (?:ai|the assistant|assistants)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Finding:
    rule: str
    why: str
    excerpt: str


def findings(text: str) -> list[Finding]:
    """Every rule the text breaks, each with the matched excerpt (empty list: clean)."""
    found: list[Finding] = []
    for rule in RULES:
        match = rule.pattern.search(text)
        if match:
            found.append(Finding(rule.name, rule.why, match.group(0)[:80]))
    return found


def reports_injection(text: str) -> bool:
    """True when a sentence talks about text planted for an AI (a report of an attack is not a
    fact about the user's work, and repeating it would carry the attack into memory)."""
    return bool(_INJECTION_REPORT.search(text))
