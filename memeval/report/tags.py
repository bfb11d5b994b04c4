"""Question results counted per tag (a benchmark's category, e.g. LoCoMo's `locomo-c2`)."""

from __future__ import annotations

from dataclasses import dataclass

from memeval.rundir.results import RunResults


@dataclass
class TagRow:
    scenario: str
    tag: str
    questions: int
    passed: int
    failed: int
    ungraded: int  # na or error: not in passed or failed
    f1_count: int  # questions with a gold answer (answer_f1)
    mean_f1: float | None


def tag_rows(results: RunResults | None) -> list[TagRow]:
    """One row per (scenario, tag): scenarios in run order, tags sorted within each; empty
    when no question carries a tag."""
    if results is None:
        return []
    rows: dict[tuple[str, str], TagRow] = {}
    scores: dict[tuple[str, str], list[float]] = {}
    for turn in results.turns:
        if turn.question is None:
            continue
        for tag in turn.question_tags:
            key = (turn.scenario, tag)
            row = rows.setdefault(key, TagRow(turn.scenario, tag, 0, 0, 0, 0, 0, None))
            row.questions += 1
            verdict = turn.question.verdict
            row.passed += verdict == "pass"
            row.failed += verdict == "fail"
            row.ungraded += verdict not in ("pass", "fail")
            if turn.answer_f1 is not None:
                scores.setdefault(key, []).append(turn.answer_f1)
    for key, values in scores.items():
        rows[key].f1_count = len(values)
        rows[key].mean_f1 = sum(values) / len(values)
    order = {scenario: i for i, scenario in enumerate(dict.fromkeys(s for s, _ in rows))}
    return [rows[key] for key in sorted(rows, key=lambda k: (order[k[0]], k[1]))]
