"""Deterministic checks: write-match on a turn's snapshot, and a question's answer checks.

Each check carries its evidence (the line that matched, or what was missing) so a reader
can trust the verdict without opening the file. Pattern rules live in `matching`.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence

from memeval.grading.f1 import token_f1
from memeval.grading.matching import check_fact, excerpt, find_any, matches, search
from memeval.rundir.record import ToolCallRecord
from memeval.rundir.results import CheckResult, Verdict
from memeval.scenario.schema import Expect, Fact, Question

__all__ = ["matches", "question_checks", "verdict_from_checks", "write_checks"]


def write_checks(
    expect: Expect, facts: dict[str, Fact], file: str, previous: str
) -> list[CheckResult]:
    """records present (on a [user] line / in the section when asked), forbids absent,
    unchanged honoured (the snapshot equals the one before this turn)."""
    checks: list[CheckResult] = []
    for fact_id in expect.records:
        name = f"records:{fact_id}"
        fact = facts.get(fact_id)
        if fact is None:
            known = ", ".join(sorted(facts)) or "none"
            evidence = f"fact {fact_id!r} is not defined in the scenario (facts: {known})"
            checks.append(CheckResult(name=name, passed=False, evidence=evidence))
            continue
        result = check_fact(fact, file)
        evidence = result.line if result.holds else _miss(result.why, result.line)
        checks.append(CheckResult(name=name, passed=result.holds, evidence=evidence))
    for pattern in expect.forbids:
        found = search(pattern, file)
        evidence = f"found: {_line_at(file, found.start())}" if found else "not in the file"
        checks.append(
            CheckResult(name=f"forbids:{pattern}", passed=found is None, evidence=evidence)
        )
    if expect.unchanged:
        same = file == previous
        evidence = "the file is byte-for-byte unchanged" if same else _first_change(previous, file)
        checks.append(CheckResult(name="unchanged", passed=same, evidence=evidence))
    return checks


def question_checks(
    question: Question, answer: str, tool_calls: Sequence[ToolCallRecord]
) -> list[CheckResult]:
    """answer_matches (every group, any-of within one), answer_excludes, answer_f1 when it
    has a `min`, must_call and must_not_call against the tools the agent actually called, and
    call_matches against the arguments it called them with."""
    checks: list[CheckResult] = []
    for i, group in enumerate(question.answer_matches):
        hit = find_any(group, answer)
        if hit is not None:
            found = search(hit[0], answer)
            evidence = f"matched {hit[0]!r}: {excerpt(answer, found)}" if found else hit[1]
        else:
            evidence = f"none of {group} in the answer"
        checks.append(
            CheckResult(name=f"answer_matches[{i}]", passed=hit is not None, evidence=evidence)
        )
    if question.answer_excludes:
        hits = [(p, search(p, answer)) for p in question.answer_excludes]
        bad = [f"{p!r}: {excerpt(answer, m)}" for p, m in hits if m is not None]
        evidence = "found " + "; ".join(bad) if bad else f"none of {question.answer_excludes}"
        checks.append(CheckResult(name="answer_excludes", passed=not bad, evidence=evidence))
    f1 = question.answer_f1
    if f1 is not None and f1.min is not None:
        score = token_f1(answer, f1.gold)
        evidence = f"F1 {score:.2f} against {f1.gold!r} (min {f1.min:g})"
        checks.append(CheckResult(name="answer_f1", passed=score >= f1.min, evidence=evidence))
    called = [call.name for call in tool_calls]
    made = ", ".join(called) or "no tool calls"
    for name in question.must_call:
        ok = name in called
        evidence = f"called {name}" if ok else f"{name} was not called ({made})"
        checks.append(CheckResult(name=f"must_call:{name}", passed=ok, evidence=evidence))
    for name in question.must_not_call:
        ok = name not in called
        evidence = f"{name} not called ({made})" if ok else _call_evidence(name, tool_calls)
        checks.append(CheckResult(name=f"must_not_call:{name}", passed=ok, evidence=evidence))
    for name, wanted in question.call_matches.items():
        checks.append(_call_match(name, wanted, tool_calls, made))
    return checks


def _call_match(
    name: str, wanted: dict[str, str], tool_calls: Sequence[ToolCallRecord], made: str
) -> CheckResult:
    """Some call of `name` whose every argument in `wanted` matches its pattern."""
    calls = [c for c in tool_calls if c.name == name]
    hit = next((c for c in calls if _has_arguments(c, wanted)), None)
    if hit is not None:
        evidence = _render_call(hit)
    else:
        asked = ", ".join(f"{k} ~ {p!r}" for k, p in wanted.items())
        seen = "; ".join(_render_call(c) for c in calls) if calls else f"not called ({made})"
        evidence = f"no {name} call with {asked}: {seen}"
    return CheckResult(name=f"call_matches:{name}", passed=hit is not None, evidence=evidence)


def _has_arguments(call: ToolCallRecord, wanted: dict[str, str]) -> bool:
    return all(
        key in call.arguments and matches(pattern, _argument_text(call.arguments[key]))
        for key, pattern in wanted.items()
    )


def _argument_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def verdict_from_checks(checks: Sequence[CheckResult]) -> Verdict:
    """pass when every check passed, with the failures as evidence otherwise; "na" when there
    is nothing to check (only a criterion or a note: the judge or a human must decide)."""
    if not checks:
        reason = "no deterministic checks: ungraded until the judge or a human decides"
        return Verdict(verdict="na", source="check", reason=reason)
    failed = [c for c in checks if not c.passed]
    if failed:
        reason = "failed: " + ", ".join(c.name for c in failed)
        return Verdict(verdict="fail", source="check", reason=reason, evidence=_evidence(failed))
    reason = f"{len(checks)} checks passed"
    return Verdict(verdict="pass", source="check", reason=reason, evidence=_evidence(checks))


def _evidence(checks: Sequence[CheckResult]) -> list[str]:
    return [f"{c.name}: {c.evidence}" for c in checks]


def _miss(why: str, line: str) -> str:
    return f"{why}: {line}" if line else why


def _line_at(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return text[start : end if end >= 0 else len(text)].strip()


def _first_change(before: str, after: str) -> str:
    changed = [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    shown = "; ".join(changed[:3]) + (f" (+{len(changed) - 3} more)" if len(changed) > 3 else "")
    return f"the file changed: {shown}" if changed else "the file changed (whitespace only)"


def _call_evidence(name: str, tool_calls: Sequence[ToolCallRecord]) -> str:
    return _render_call(next(c for c in tool_calls if c.name == name))


def _render_call(call: ToolCallRecord) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
    return f"called {call.name}({args})"
