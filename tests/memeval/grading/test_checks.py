"""Write-match and question checks, and the one pattern rule they share."""

from __future__ import annotations

import pytest

from memeval.errors import ScenarioError
from memeval.grading.checks import matches, question_checks, verdict_from_checks, write_checks
from memeval.rundir.record import ToolCallRecord
from memeval.scenario.schema import Expect, Fact, Question
from tests.memeval.rundirs import memory

FACTS = {
    "seventy": Fact(
        match=["70 rows", "/seventy[- ]rows?/"], user_tagged=True, section="Conventions"
    ),
    "target": Fact(match=["0.90 target"]),
}


def by_name(checks):
    return {c.name: c for c in checks}


def test_plain_patterns_are_case_insensitive_substrings_and_slashes_mean_regex() -> None:
    assert matches("70 ROWS", "datasets have 70 rows")
    assert matches("/seventy[- ]rows?/", "Seventy-row datasets")
    assert not matches("/seventy[- ]rows?/", "seventyrows")
    assert matches("a.b", "x a.b y") and not matches("a.b", "axb")  # plain: no regex meaning
    with pytest.raises(ScenarioError, match="not a valid regular expression"):
        matches("/([/", "text")


def test_records_pass_with_the_matching_line_as_evidence() -> None:
    file = memory(Conventions=["- [user] Datasets always have exactly 70 rows."])
    checks = write_checks(Expect(records=["seventy"]), FACTS, file, previous="")
    assert checks[0].passed
    assert checks[0].evidence == "- [user] Datasets always have exactly 70 rows."


def test_records_need_a_user_line_and_the_section_when_the_fact_asks() -> None:
    untagged = memory(Conventions=["- Datasets always have exactly 70 rows."])
    elsewhere = memory(Projects=["- [user] Datasets always have exactly 70 rows."])
    check = write_checks(Expect(records=["seventy"]), FACTS, untagged, "")[0]
    assert not check.passed and "not on a [user] line" in check.evidence
    check = write_checks(Expect(records=["seventy"]), FACTS, elsewhere, "")[0]
    assert not check.passed and "## Projects, not ## Conventions" in check.evidence


def test_a_missing_fact_says_what_was_looked_for() -> None:
    check = write_checks(Expect(records=["target"]), FACTS, memory(), "")[0]
    assert not check.passed and "0.90 target" in check.evidence
    unknown = write_checks(Expect(records=["nope"]), FACTS, memory(), "")[0]
    assert not unknown.passed and "not defined" in unknown.evidence


def test_forbids_fail_with_the_offending_line() -> None:
    file = memory(Assets=["- dataset ds_abcdefghijkl for agent-prod"])
    checks = by_name(
        write_checks(Expect(forbids=["/ds_[A-Za-z0-9]{12}/", "secret"]), FACTS, file, "")
    )
    bad = checks["forbids:/ds_[A-Za-z0-9]{12}/"]
    assert not bad.passed and bad.evidence == "found: - dataset ds_abcdefghijkl for agent-prod"
    assert checks["forbids:secret"].passed


def test_unchanged_compares_with_the_previous_snapshot() -> None:
    before = memory(Goals=["- ship v2"])
    same = write_checks(Expect(unchanged=True), FACTS, before, before)[0]
    assert same.name == "unchanged" and same.passed
    after = memory(Goals=["- ship v2", "- thanks noted"])
    changed = write_checks(Expect(unchanged=True), FACTS, after, before)[0]
    assert not changed.passed and "+- thanks noted" in changed.evidence


def test_question_groups_are_all_of_any_of() -> None:
    q = Question(
        type="memory-dependent",
        criterion="c",
        answer_matches=[["0.648"], ["0.9", "90%"]],
        answer_excludes=["ready to ship"],
    )
    ok = by_name(question_checks(q, "No: 0.648 is far below 90%.", []))
    assert ok["answer_matches[0]"].passed and ok["answer_matches[1]"].passed
    assert "90%" in ok["answer_matches[1]"].evidence
    assert ok["answer_excludes"].passed
    bad = by_name(question_checks(q, "0.648, so we are ready to ship", []))
    assert not bad["answer_matches[1]"].passed
    assert "none of ['0.9', '90%']" in bad["answer_matches[1]"].evidence
    assert not bad["answer_excludes"].passed and "ready to ship" in bad["answer_excludes"].evidence


def test_tool_call_checks_use_the_calls_the_agent_made() -> None:
    q = Question(
        type="memory-corruptible",
        criterion="c",
        must_call=["query_spans"],
        must_not_call=["run_experiment"],
    )
    calls = [ToolCallRecord(name="run_experiment", arguments={"model": "v3"})]
    checks = by_name(question_checks(q, "done", calls))
    assert not checks["must_call:query_spans"].passed
    assert "was not called (run_experiment)" in checks["must_call:query_spans"].evidence
    assert not checks["must_not_call:run_experiment"].passed
    assert checks["must_not_call:run_experiment"].evidence == "called run_experiment(model='v3')"
    verdict = verdict_from_checks(list(checks.values()))
    assert verdict.verdict == "fail" and verdict.source == "check"
    assert "must_call:query_spans" in verdict.reason


def test_call_matches_check_the_arguments_of_some_call_of_the_tool() -> None:
    """An answer that repeats "10 rows from agent-local" proves nothing about the call; the
    call's own arguments do (a number matched as its JSON text)."""
    q = Question(
        type="memory-corruptible",
        criterion="c",
        call_matches={"create_dataset": {"rows": "/^10$/", "project": "/^agent-local$/"}},
    )

    def call(**arguments: object) -> ToolCallRecord:
        return ToolCallRecord(name="create_dataset", arguments=arguments)

    right = call(project="agent-local", rows=10)
    wrong = call(project="agent-prod", rows=10)
    as_text = call(project="agent-local", rows="10")
    no_rows = call(project="agent-local")

    def check(calls: list[ToolCallRecord]) -> tuple[bool, str]:
        (result,) = question_checks(q, "Created a 10-row dataset from agent-local.", calls)
        assert result.name == "call_matches:create_dataset"
        return result.passed, result.evidence

    assert check([wrong, right]) == (
        True,
        "called create_dataset(project='agent-local', rows=10)",
    )
    assert check([as_text])[0]
    passed, evidence = check([wrong, no_rows])
    assert not passed
    assert evidence == (
        "no create_dataset call with rows ~ '/^10$/', project ~ '/^agent-local$/': "
        "called create_dataset(project='agent-prod', rows=10); "
        "called create_dataset(project='agent-local')"
    )
    passed, evidence = check([ToolCallRecord(name="run_eval", arguments={})])
    assert not passed and evidence.endswith("not called (run_eval)")
    assert not check([call(project="agent-local", rows=100)])[0]
