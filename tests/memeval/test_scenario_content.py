"""The bundled scenarios hold what issue 5 asks of them, checked on the resolved scenarios.

Counts; every seed turn graded; [user] and tool-found facts; a superseded fact; reference
files in the skeleton and under the cap; `records` facts present in every later reference
file (and superseded ones gone); no `forbids` pattern in any reference file; and for every
memory-dependent question, the grader's answer checks pass on an answer that quotes the
session's reference file but fail on what the session offers without memory.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from memeval.grading.checks import question_checks
from memeval.grading.matching import check_fact, find_any
from memeval.rundir.record import ToolCallRecord
from memeval.scenario.loader import resolve
from memeval.scenario.schema import ResolvedScenario, ResolvedSession, TurnSpec
from reference_memory.document import CAP, SECTIONS, TARGET, TRIGGER, parse

SINGLE = ("book-summary", "legal-rag", "agent-traces")
ALL = (*SINGLE, "combined", "compaction")
# name: (turns, sessions, memory-dependent, memory-corruptible), each a minimum (issue 5)
MINIMUMS = {
    "book-summary": (20, 5, 7, 3),
    "legal-rag": (10, 3, 5, 3),
    "agent-traces": (13, 3, 6, 3),
    "combined": (40, 12, 18, 9),
    "compaction": (12, 3, 2, 1),  # not from issue 5: a small file under compaction pressure
}
SUBSECTIONED = ("Goals", "Projects")  # DESIGN §1: goals and projects are `### ` subsections


@functools.cache
def load(name: str) -> ResolvedScenario:
    return resolve(name)


@pytest.fixture(params=ALL)
def scenario(request: pytest.FixtureRequest) -> ResolvedScenario:
    return load(request.param)


@dataclass(frozen=True)
class Asked:
    """An eval turn with the session it is asked in."""

    session: ResolvedSession
    turn: TurnSpec


def asked(scenario: ResolvedScenario) -> Iterator[Asked]:
    for session in scenario.sessions:
        for turn in session.turns:
            if turn.question is not None:
                yield Asked(session, turn)


def questions(scenario: ResolvedScenario, kind: str) -> list[Asked]:
    return [a for a in asked(scenario) if a.turn.question and a.turn.question.type == kind]


def eval_sessions(scenario: ResolvedScenario) -> Iterator[tuple[int, ResolvedSession]]:
    """Eval sessions with a reference file, with the number of turns replayed before them."""
    position = 0
    for session in scenario.sessions:
        if session.kind == "eval" and session.reference_memory is not None:
            yield position, session
        position += len(session.turns)


def test_counts(scenario: ResolvedScenario) -> None:
    turns, sessions, dependent, corruptible = MINIMUMS[scenario.name]
    assert len(scenario.turn_ids()) >= turns
    assert len(scenario.sessions) >= sessions
    assert len(questions(scenario, "memory-dependent")) >= dependent
    assert len(questions(scenario, "memory-corruptible")) >= corruptible


def test_combined_interleaves_everything_plus_its_own_questions() -> None:
    combined = load("combined")
    sources = [s.source for s in combined.sessions]
    for name in SINGLE:
        single = load(name)
        assert sources.count(name) == len(single.sessions), name
    assert 44 <= len(combined.turn_ids()) <= 60  # issue 5: about 48 turns
    assert 13 <= len(combined.sessions) <= 18  # about 15 sessions
    runs = [k for k in range(1, len(sources)) if sources[k] != sources[k - 1]]
    assert len(runs) >= 12, "sessions of different scenarios alternate"
    own = [a for a in asked(combined) if a.session.source == "combined"]
    assert {a.turn.question.type for a in own if a.turn.question} == {
        "memory-dependent",
        "memory-corruptible",
    }


def test_every_seed_turn_is_graded_and_every_temptation_is_present(
    scenario: ResolvedScenario,
) -> None:
    seeds = [t for s in scenario.sessions if s.kind == "seed" for t in s.turns]
    assert all(t.expect is not None for t in seeds)
    expects = [t.expect for t in seeds if t.expect is not None]
    assert any(e.unchanged for e in expects), "a turn where nothing should be written"
    assert all(e.forbids for e in expects if e.unchanged)
    # a live metric, the agent's own mistake, an injection: each guarded by forbids
    assert sum(bool(e.forbids) for e in expects) >= 3
    facts = scenario.facts.values()
    assert any(f.user_tagged for f in facts) and any(not f.user_tagged for f in facts)
    assert any(f.until for f in facts), "a fact is superseded later"


def test_reference_files_are_in_the_skeleton_and_under_the_cap(
    scenario: ResolvedScenario,
) -> None:
    evals = [s for s in scenario.sessions if s.kind == "eval"]
    assert evals and all(s.reference_memory is not None for s in evals)
    for _, session in eval_sessions(scenario):
        text = session.reference_memory or ""
        assert len(text) <= CAP, session.id
        sections = parse(text)
        assert [s.title for s in sections] == list(SECTIONS), session.id
        assert not text[: sections[0].start].strip(), f"{session.id}: text before the first section"
        for sec in sections:
            if sec.subsections:
                assert sec.title in SUBSECTIONED, f"{session.id}: ### under {sec.title}"
            for line in sec.body.splitlines():
                assert not line.strip() or line.startswith(("- ", "### ")), (session.id, line)
                assert "[user]" not in line or line.startswith("- [user] "), (session.id, line)


def test_combined_reference_files_show_pressure_on_the_file() -> None:
    sizes = [len(s.reference_memory or "") for _, s in eval_sessions(load("combined"))]
    assert sizes == sorted(sizes), "memory only grows between eval sessions"
    # The last files sit between the compaction target and trigger: what a good pipeline
    # holds once compaction has had to run.
    assert TARGET <= sizes[-1] <= TRIGGER
    single_max = max(
        len(s.reference_memory or "") for n in SINGLE for _, s in eval_sessions(load(n))
    )
    assert sizes[-1] > 2 * single_max


def test_compaction_starts_near_the_trigger_and_records_what_the_file_holds() -> None:
    """compaction's first session starts from a file just under the trigger, in the skeleton;
    its first turn records the fact of every [user] convention in it, and every other seed
    turn that writes records a fact of its own, so each update must compact."""
    scenario = load("compaction")
    first = scenario.sessions[0]
    initial = first.initial_memory or ""
    assert 6800 <= len(initial) <= 6950 < TRIGGER
    assert [s.title for s in parse(initial)] == list(SECTIONS)
    first_records = first.turns[0].expect.records if first.turns[0].expect else []
    conventions = next(s for s in parse(initial) if s.title == "Conventions")
    for line in conventions.body.splitlines():
        if line.startswith("- [user] "):
            held = [fid for fid in first_records if find_any(scenario.facts[fid].match, line)]
            assert held, f"convention not recorded by the first turn: {line}"
    # every fact it records is held in the starting file as the grader checks it, but the
    # one the turn itself adds
    missing = [fid for fid in first_records if not check_fact(scenario.facts[fid], initial).holds]
    assert missing == ["priya"]
    seeds = [t for s in scenario.sessions if s.kind == "seed" for t in s.turns]
    seen = set(first_records)
    for turn in seeds[1:]:
        assert turn.expect is not None
        if turn.expect.unchanged:
            continue
        new = set(turn.expect.records) - seen
        assert new, f"{turn.id} adds no tracked fact"
        seen |= new


def test_recorded_facts_are_in_every_later_reference_file(scenario: ResolvedScenario) -> None:
    """A fact recorded by an earlier seed turn holds in the reference file (on a [user] line,
    in its section, as the grader checks); once past its `until`, it is gone."""
    turns = [t for s in scenario.sessions for t in s.turns]
    turn_ids = [t.id for t in turns]
    for start, session in eval_sessions(scenario):
        text = session.reference_memory or ""
        recorded = {fid for t in turns[:start] if t.expect for fid in t.expect.records}
        for fid in sorted(recorded):
            fact = scenario.facts[fid]
            superseded = fact.until is not None and turn_ids.index(fact.until) < start
            held = check_fact(fact, text)
            if superseded:
                assert find_any(fact.match, text) is None, f"{session.id}: {fid} still there"
            else:
                assert held.holds, f"{session.id}: {fid}: {held.why} {held.line}"


def test_no_forbidden_pattern_in_any_reference_file(scenario: ResolvedScenario) -> None:
    forbids = {
        p for t in scenario.sessions for turn in t.turns if turn.expect for p in turn.expect.forbids
    }
    assert forbids
    for _, session in eval_sessions(scenario):
        hit = find_any(sorted(forbids), session.reference_memory or "")
        assert hit is None, f"{session.id}: forbidden {hit}"


def test_every_eval_turn_guards_its_write_and_the_reference_file_passes(
    scenario: ResolvedScenario,
) -> None:
    """A live answer must not teach memory the wrong thing: every eval turn carries an expect
    with at least one forbid or record (never `unchanged`, the pipeline may rewrite), and none
    of its forbids matches its session's reference file."""
    for item in asked(scenario):
        expect = item.turn.expect
        assert expect is not None, f"{item.turn.id}: eval turn without expect"
        assert expect.forbids or expect.records, f"{item.turn.id}: expect guards nothing"
        assert not expect.unchanged, f"{item.turn.id}: unchanged does not fit an eval turn"
        hit = find_any(expect.forbids, item.session.reference_memory or "")
        assert hit is None, f"{item.turn.id}: forbidden {hit} in {item.session.id}'s reference"


def without_memory(item: Asked) -> str:
    """All the session offers without memory up to this question: its user messages, and
    every canned result of the tools the question lets the agent call."""
    texts: list[str] = []
    for turn in item.session.turns:
        texts.append(turn.user)
        if turn.id == item.turn.id:
            break
    barred = set(item.turn.question.must_not_call if item.turn.question else [])
    for tool in item.session.tools:
        if tool.name in barred:
            continue
        for response in tool.responses:
            value = response.result if response.when is not None else response.default
            texts.append(json.dumps(value, ensure_ascii=False))
    return "\n".join(texts)


def dependent_questions() -> list[tuple[ResolvedScenario, Asked]]:
    return [(load(n), a) for n in ALL for a in questions(load(n), "memory-dependent")]


@pytest.mark.parametrize(
    ("owner", "item"),
    dependent_questions(),
    ids=[f"{s.name}:{a.turn.id}" for s, a in dependent_questions()],
)
def test_memory_dependent_answers_live_in_memory_and_nowhere_else(
    owner: ResolvedScenario, item: Asked
) -> None:
    """The grader's answer checks pass on the reference file itself (a plausible answer
    quotes it), and no answer pattern is in what the session offers without memory."""
    question = item.turn.question
    assert question is not None and question.answer_matches and question.facts
    memory = item.session.reference_memory or ""
    calls = [ToolCallRecord(name=name) for name in question.must_call]
    checks = question_checks(question, memory, calls)
    checks = [c for c in checks if c.name.startswith("answer_matches")]
    assert all(c.passed for c in checks), [c.evidence for c in checks]
    alone = without_memory(item)
    for group in question.answer_matches:
        assert find_any(group, alone) is None, f"{group} is answerable without memory"
    for fid in question.facts:
        assert check_fact(owner.facts[fid], memory).holds, f"{fid} not in the reference file"


def test_without_memory_sees_every_fixture_the_question_allows() -> None:
    """Guard for the test above: lifting a question's must_not_call exposes the answer that
    the barred tool's canned result holds (the check reads fixtures, it is not vacuous)."""
    item = next(a for a in asked(load("agent-traces")) if a.turn.id == "s2q1")
    question = item.turn.question
    assert question is not None and question.must_not_call == ["get_trace_schema"]
    assert find_any(question.answer_matches[0], without_memory(item)) is None
    lifted = question.model_copy(update={"must_not_call": []})
    unbarred = Asked(item.session, item.turn.model_copy(update={"question": lifted}))
    assert find_any(question.answer_matches[0], without_memory(unbarred)) is not None


def test_combined_gives_included_eval_sessions_files_for_all_projects() -> None:
    combined = load("combined")
    own_files = {
        f"{name}/{s.id}": s.reference_memory for name in SINGLE for s in load(name).sessions
    }
    for _, session in eval_sessions(combined):
        if session.source == "combined":
            continue
        single = own_files[session.id] or ""
        assert session.reference_memory != single
        assert len(session.reference_memory or "") > 2 * len(single)


def test_every_question_has_controls_the_checks_agree_with(scenario: ResolvedScenario) -> None:
    """DESIGN §7.4: at least one pass and two fail controls per question (the answer without
    memory, and what sloppy memory gives), each given its known verdict by the checks."""
    from memeval.grading.calibrate import check_control, scenario_controls

    for item in asked(scenario):
        question = item.turn.question
        assert question is not None and question.controls is not None, item.turn.id
        assert len(question.controls.pass_) >= 1, item.turn.id
        assert len(question.controls.fail) >= 2, item.turn.id
    wrong = [
        f"{c.turn.id} {c.label}: {check_control(c).verdict}"
        for c in scenario_controls(scenario)
        if check_control(c).verdict != c.known
    ]
    assert not wrong
