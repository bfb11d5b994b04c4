"""The bundled scenarios hold what issue 5 asks of them, checked on the resolved scenarios.

Counts; every seed turn graded; [user] and tool-found facts; a superseded fact; reference
files in the skeleton and under the cap; `records` facts present in every later reference
file (and superseded ones gone); no `forbids` pattern in any reference file; and for every
memory-dependent question, the grader's answer checks pass on an answer that quotes the
session's reference file but fail on what the session offers without memory. Eval turns
that state a durable fact record it (pinned by id), and every superseded fact is followed by
a tracked successor, so a file that swaps back to the old value loses a tracked fact.
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
    "compaction": (12, 9, 2, 1),  # not from issue 5: a small file under compaction pressure
}
SUBSECTIONED = ("Goals", "Projects")  # DESIGN §1: goals and projects are `### ` subsections
# name: tracked facts after resolving (a combined scenario holds its includes' facts, prefixed)
FACTS = {"book-summary": 20, "legal-rag": 16, "agent-traces": 12, "combined": 76, "compaction": 23}
# name: {eval turn: the facts it records}: a durable fact the question brings (book-summary s5q5:
# Dana's new project; legal-rag s2q5: the patched v3's UK score its live re-run measures)
EVAL_RECORDS: dict[str, dict[str, list[str]]] = {
    "book-summary": {"s5q5": ["poem-local-project"]},
    "legal-rag": {"s2q5": ["v3-patched-uk"]},
    "agent-traces": {},
    "combined": {
        "book-summary/s5q5": ["book-summary/poem-local-project"],
        "legal-rag/s2q5": ["legal-rag/v3-patched-uk"],
    },
    "compaction": {},
}
# name: {superseded fact: the fact that follows the new value}
SUCCESSORS: dict[str, dict[str, str]] = {
    "book-summary": {"seventy-rows": "eighty-rows"},
    "legal-rag": {"signoff-priya": "signoff-marco"},
    "agent-traces": {"berlin-time": "london-time"},
    "combined": {
        "book-summary/seventy-rows": "book-summary/eighty-rows",
        "legal-rag/signoff-priya": "legal-rag/signoff-marco",
        "agent-traces/berlin-time": "agent-traces/london-time",
    },
    "compaction": {"horizon-8": "horizon-12"},
}


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


def test_combined_seeds_take_a_file_that_adds_past_the_trigger() -> None:
    """Issue 16: the combined run puts the file under real pressure. From the last reference
    file written before compaction was needed (agent-traces/s2), a pipeline that adds each fact
    recorded since as a line of its own, worded as the next reference file words it, and drops
    only what a later turn superseded, passes the 7,000 trigger on both handover turns: it
    must compact. The next reference file holds every one of those facts (test above) under
    the trigger, because it is that file compacted (tighter wording, a restated asset gone)."""
    scenario = load("combined")
    turns = [t for s in scenario.sessions for t in s.turns]
    turn_ids = [t.id for t in turns]
    files = {s.id: (n, s.reference_memory or "") for n, s in eval_sessions(scenario)}
    (before, old), (after, new) = files["agent-traces/s2"], files["book-summary/s5"]
    assert len(old) < TARGET  # written before compaction had anything to do

    def lines(text: str, fids: set[str]) -> list[str]:
        return [
            line
            for line in text.splitlines()
            if line.startswith("- ")
            and any(find_any(scenario.facts[f].match, line) is not None for f in fids)
        ]

    known = {f for t in turns[:before] if t.expect for f in t.expect.records}
    growth = {}
    for end in range(before + 1, after + 1):
        recorded = {f for t in turns[before:end] if t.expect for f in t.expect.records} - known
        superseded = {
            f
            for f, fact in scenario.facts.items()
            if fact.until and before <= turn_ids.index(fact.until) < end
        }
        added, gone = lines(new, recorded), lines(old, superseded)
        size = len(old) + sum(len(x) + 1 for x in added) - sum(len(x) + 1 for x in gone)
        growth[turn_ids[end - 1]] = size
    assert (len(recorded), len(added)) == (25, 23)
    assert [t for t, size in growth.items() if size > TRIGGER] == ["handover-t1", "handover-t2"]
    assert growth["handover-t2"] > TRIGGER + 250, growth
    assert TARGET <= len(new) <= TRIGGER - 250


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


def test_compaction_restarts_each_later_seed_session_at_the_trigger() -> None:
    """Every later seed session of compaction starts from the file as the team left it, just
    under the trigger: it holds every fact recorded before it (a superseded one gone), so the
    retention grid sees no loss at the session boundary; it offers a compactor something of
    every low-priority kind (a finished and a stale `### ` subsection without a [user] line,
    a bullet repeated word for word); and its first turn records a new fact, so that write
    compacts even after a compaction that reached its target."""
    scenario = load("compaction")
    turns = [t for s in scenario.sessions for t in s.turns]
    turn_ids = [t.id for t in turns]
    later = [s for s in scenario.sessions[1:] if s.kind == "seed"]
    assert [s.id for s in later] == ["s1b", "s1c", "s2", "s3", "s4", "s5", "s6"]
    for session in later:
        text = session.initial_memory or ""
        assert TRIGGER - 60 <= len(text) < TRIGGER, (session.id, len(text))
        assert [s.title for s in parse(text)] == list(SECTIONS)
        start = turn_ids.index(session.turns[0].id)
        recorded = {fid for t in turns[:start] if t.expect for fid in t.expect.records}
        for fid in sorted(recorded):
            fact = scenario.facts[fid]
            if fact.until is not None and turn_ids.index(fact.until) < start:
                assert find_any(fact.match, text) is None, (session.id, fid)
            else:
                held = check_fact(fact, text)
                assert held.holds, f"{session.id}: {fid}: {held.why}"
        blocks = text.split("\n### ")[1:]
        low = [b for b in blocks if b.startswith(("Done:", "Stale:")) and "[user]" not in b]
        assert {b.split(":")[0] for b in low} == {"Done", "Stale"}, session.id
        bullets = [line for line in text.splitlines() if line.startswith("- ")]
        assert len(bullets) - len(set(bullets)) == 1, f"{session.id}: one word-for-word repeat"
        first = session.turns[0].expect
        assert first is not None and set(first.records) - recorded, session.id


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


def test_no_answer_check_passes_on_the_question_repeated(scenario: ResolvedScenario) -> None:
    """A small model often opens by repeating the message ("Set up a hallucination eval for
    contract-qa's generated answers…"): an answer_matches group that the user's own words
    satisfy passes an answer that says nothing, so every group must need words the
    question does not hold."""
    echoed = [
        f"{item.turn.id} answer_matches[{gi}]: {hit}"
        for item in asked(scenario)
        for gi, group in enumerate(item.turn.question.answer_matches if item.turn.question else [])
        if (hit := find_any(group, item.turn.user))
    ]
    assert not echoed


def test_fact_and_eval_record_counts_are_pinned(scenario: ResolvedScenario) -> None:
    """Every eval turn keeps its expect; the eval turns that record are exactly the pinned
    ones (a durable fact the question brings), each with its facts."""
    assert len(scenario.facts) == FACTS[scenario.name]
    items = list(asked(scenario))
    assert sum(a.turn.expect is not None for a in items) == len(items)
    recording = {
        a.turn.id: a.turn.expect.records for a in items if a.turn.expect and a.turn.expect.records
    }
    assert recording == EVAL_RECORDS[scenario.name]


def test_eval_turn_records_are_new_at_the_turn_and_kept_after_it(
    scenario: ResolvedScenario,
) -> None:
    """A fact an eval turn records is in no reference file up to that turn's session (the
    oracle must not know it before the user says it) and holds in every later one."""
    position = {t.id: i for i, t in enumerate(t for s in scenario.sessions for t in s.turns)}
    files = list(eval_sessions(scenario))
    for turn_id, fids in EVAL_RECORDS[scenario.name].items():
        for fid in fids:
            fact = scenario.facts[fid]
            later = [s for start, s in files if start > position[turn_id]]
            earlier = [s for start, s in files if start <= position[turn_id]]
            assert earlier, f"{turn_id}: no reference file before it"
            for session in earlier:
                hit = find_any(fact.match, session.reference_memory or "")
                assert hit is None, f"{session.id} knows {fid} before {turn_id}: {hit}"
            for session in later:
                held = check_fact(fact, session.reference_memory or "")
                assert held.holds, f"{session.id}: {fid}: {held.why}"
            if scenario.name == "combined":
                assert later, f"{turn_id}: no later reference file in combined"


def test_book_summary_s5q5_records_the_poetry_project() -> None:
    """poem-local is Dana's new project: a [user] line saying what it is holds the fact; a
    bare tool error, a book-agent rule pinned on it or an untagged line does not."""
    scenario = load("book-summary")
    turn = next(a.turn for a in asked(scenario) if a.turn.id == "s5q5")
    assert turn.expect is not None and turn.expect.records == ["poem-local-project"]
    fact = scenario.facts["poem-local-project"]
    assert fact.user_tagged and fact.until is None
    good = [
        "- [user] A new agent Dana is starting: a poetry-generation agent, project poem-local.",
        "- [user] poem-local: Dana's new poetry agent, starting next week.",
    ]
    bad = [
        "- [user] poem-local: project not found (no traces yet).",
        "- [user] poem-local: measure hallucination on the summarize span only.",
        "- A new poetry-generation agent, project poem-local.",
    ]
    assert all(check_fact(fact, line).holds for line in good)
    assert not any(check_fact(fact, line).holds for line in bad)
    assert find_any(turn.expect.forbids, "\n".join(good)) is None
    assert find_any(turn.expect.forbids, bad[1]) is not None


def test_legal_rag_s2q5_records_the_patched_v3_uk_score() -> None:
    """The live re-run of the patched v3 (0.566 on the UK subset) is kept as a checkpoint
    of the v2-over-v3 decision; the number must be v3's, and v2 stays chosen."""
    scenario = load("legal-rag")
    turn = next(a.turn for a in asked(scenario) if a.turn.id == "s2q5")
    assert turn.expect is not None and turn.expect.records == ["v3-patched-uk"]
    question = turn.question
    assert question is not None and question.must_call == ["run_retrieval_eval"]
    fact = scenario.facts["v3-patched-uk"]
    assert not fact.user_tagged and fact.until is None  # the number comes from the tool
    good = [
        "- UK-contract subset: v2 0.631, v3 0.412; v3 after the team's patch: 0.566, behind v2.",
        "- Patched v3 on the UK subset: 56.6% (was 41.2%), still below v2.",
    ]
    bad = ["- UK subset after the patch: v2 0.566.", "- UK-contract subset: v2 0.631, v3 0.412."]
    assert all(check_fact(fact, line).holds for line in good)
    assert not any(check_fact(fact, line).holds for line in bad)
    assert find_any(turn.expect.forbids, "\n".join(good)) is None
    assert find_any(turn.expect.forbids, "- v3 is now fixed: 0.566 on the UK subset.") is not None


def first_line_holding(scenario: ResolvedScenario, fid: str) -> str:
    """The first line, over the starting and reference files in replay order, that holds."""
    for session in scenario.sessions:
        for text in (session.initial_memory, session.reference_memory):
            held = check_fact(scenario.facts[fid], text or "")
            if held.holds:
                return held.line
    raise AssertionError(f"{fid} is in no starting or reference file")


def test_every_superseded_fact_is_followed_by_a_tracked_successor(
    scenario: ResolvedScenario,
) -> None:
    """The turn after which a fact may go records the fact of the new value, so retention
    catches a file that swaps back: put the old line in place of the new one in the last
    reference file and the successor no longer holds (the stale-beside-new forbids cannot see
    that file, the old value is alone in it)."""
    superseded = {fid for fid, fact in scenario.facts.items() if fact.until}
    assert superseded == set(SUCCESSORS[scenario.name])
    turns = {t.id: t for s in scenario.sessions for t in s.turns}
    last = [s for _, s in eval_sessions(scenario)][-1].reference_memory or ""
    for old_id, new_id in SUCCESSORS[scenario.name].items():
        old, new = scenario.facts[old_id], scenario.facts[new_id]
        assert new.until is None, new_id
        stated = turns[old.until or ""].expect
        assert stated is not None and new_id in stated.records, f"{old.until} records {new_id}"
        held = check_fact(new, last)
        assert held.holds, f"{new_id}: {held.why}"
        swapped = last.replace(held.line, first_line_holding(scenario, old_id))
        assert check_fact(old, swapped).holds, old_id
        assert not check_fact(new, swapped).holds, f"{new_id} survives a swap back to {old_id}"


def test_the_marco_sign_off_is_not_held_by_his_launch_doc_line() -> None:
    """A file that gives the sign-off back to Priya but keeps Marco's launch-doc wish loses
    signoff-marco (and keeps launch-doc), so retention catches that swap-back too."""
    scenario = load("legal-rag")
    marco, doc = scenario.facts["signoff-marco"], scenario.facts["launch-doc"]
    held = [
        "- [user] Marco Rossi (legal team) signs off the launch.",
        "- [user] Launch sign-off: Marco Rossi (took over from Priya).",
        "- [user] Launch approver is Marco Rossi.",
    ]
    assert all(check_fact(marco, line).holds for line in held)
    swapped = (
        "- [user] Priya (legal team) signs off the launch. Marco Rossi wants a one-page launch"
        " doc: golden-set score, UK-subset score, open risks."
    )
    assert not check_fact(marco, swapped).holds
    assert check_fact(doc, swapped).holds
