"""How check, judge and human verdicts combine into the effective one, in one place.

A human grade overrides everything. Otherwise failed (or errored) checks stand, and a judge
decides only when the checks passed (or there were none); a judge that failed makes the
verdict "error", since a failed judgement is not evidence either way. A judge that says the
answer was not attempted (it declined or asked back) makes the question a fail marked
`not_attempted`: an "I don't know" never becomes an ungraded "na". Every effective verdict
keeps its source.
"""

from __future__ import annotations

from memeval.rundir.results import HumanGrade, JudgeResult, Verdict


def effective(check: Verdict, judge: JudgeResult | None, human: HumanGrade | None) -> Verdict:
    if human is not None:
        reason = human.note or f"graded by {human.grader or 'a human'}"
        return Verdict(
            verdict=human.verdict, source="human", reason=reason, evidence=check.evidence
        )
    if check.verdict not in ("pass", "na") or judge is None:
        return check
    if judge.verdict == "error":
        reason = f"the judge failed: {judge.error or 'unknown error'}"
        return Verdict(verdict="error", source="judge", reason=reason, evidence=check.evidence)
    if judge.verdict == "not-attempted":
        reason = f"not attempted: {judge.reason}" if judge.reason else "not attempted"
        return Verdict(
            verdict="fail",
            source="judge",
            reason=reason,
            evidence=check.evidence,
            not_attempted=True,
        )
    return Verdict(
        verdict=judge.verdict, source="judge", reason=judge.reason, evidence=check.evidence
    )


def headline(write: Verdict | None, question: Verdict | None) -> Verdict:
    """The turn's one verdict: a fail anywhere, else an error, else a pass, else "na" (nothing
    expected, or nothing graded yet). The question speaks first when both agree."""
    present = [v for v in (question, write) if v is not None]
    for wanted in ("fail", "error", "pass", "na"):
        for verdict in present:
            if verdict.verdict == wanted:
                return verdict
    return Verdict(verdict="na", source="check", reason="nothing expected of this turn")
