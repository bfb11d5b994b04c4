"""Checks on one scenario file beyond its schema: ids, references, turn kinds, patterns, tools.

`Known` says which facts and tools references may name; for a combined file it includes the
prefixed facts and the tools of its included scenarios.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from memeval.scenario.patterns import pattern_problem
from memeval.scenario.problems import Problem, listing, show
from memeval.scenario.schema import (
    MEMORY_CAP,
    Controls,
    Expect,
    Question,
    Scenario,
    Session,
    Tool,
    TurnSpec,
)
from memeval.scenario.yamlsource import YPath
from reference_memory import (
    SECTIONS,  # the skeleton's sections: where a fact may sit
    missing_sections,
)

ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
ID_RULE = "letters, digits, '.', '_', '-'; no '/'"


@dataclass(frozen=True)
class Known:
    facts: frozenset[str]
    tools: frozenset[str]  # the tools own sessions may call


def check_file(scenario: Scenario, known: Known) -> list[Problem]:
    """Every problem of one file that needs no other file (includes are resolved already)."""
    problems: list[Problem] = []
    problems += _tools(scenario.tools)
    problems += _facts(scenario)
    problems += _ids(scenario)
    for si, session in enumerate(scenario.sessions):
        problems += _session(session, ("sessions", si), known)
    return problems


def _bad_id(value: str) -> str | None:
    return None if ID_PATTERN.match(value) else f"{show(value)} is not a valid id ({ID_RULE})"


def _ids(scenario: Scenario) -> Iterator[Problem]:
    sessions: dict[str, int] = {}
    turns: dict[str, str] = {}
    for si, session in enumerate(scenario.sessions):
        path: YPath = ("sessions", si, "id")
        if bad := _bad_id(session.id):
            yield Problem(path, bad)
        elif session.id in sessions:
            yield Problem(
                path, f"duplicate session id {session.id!r} (also sessions[{sessions[session.id]}])"
            )
        sessions.setdefault(session.id, si)
        for ti, turn in enumerate(session.turns):
            path = ("sessions", si, "turns", ti, "id")
            if bad := _bad_id(turn.id):
                yield Problem(path, bad)
            elif turn.id in turns:
                yield Problem(
                    path, f"duplicate turn id {turn.id!r} (also in session {turns[turn.id]!r})"
                )
            turns.setdefault(turn.id, session.id)


def _facts(scenario: Scenario) -> Iterator[Problem]:
    for fid, fact in scenario.facts.items():
        if bad := _bad_id(fid):
            yield Problem(("facts", fid), bad, at_key=True)
        for i, pattern in enumerate(fact.match):
            if why := pattern_problem(pattern):
                yield Problem(("facts", fid, "match", i), why)
        if fact.section is not None and fact.section not in SECTIONS:
            yield Problem(
                ("facts", fid, "section"),
                f"{show(fact.section)} is not a section (valid: {listing(SECTIONS)})",
            )


def _tools(tools: list[Tool]) -> Iterator[Problem]:
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        path: YPath = ("tools", i)
        if tool.name in seen:
            yield Problem((*path, "name"), f"duplicate tool name {tool.name!r}")
        seen.add(tool.name)
        params = tool.parameters
        props = params.get("properties", {})
        if params.get("type") != "object" or not isinstance(props, dict):
            yield Problem(
                (*path, "parameters"),
                "must be a JSON Schema object (valid: {type: object, properties: {...}})",
            )
            props = {}
        yield from _responses(tool, path, set(props))


def _responses(tool: Tool, path: YPath, params: set[str]) -> Iterator[Problem]:
    last = len(tool.responses) - 1
    for ri, resp in enumerate(tool.responses):
        rpath = (*path, "responses", ri)
        given = resp.model_fields_set
        if "default" in given:
            if given & {"when", "result"}:
                yield Problem(rpath, "a response has either when + result, or default alone")
            elif ri != last:
                yield Problem(rpath, "default must be the last response (later ones never match)")
        elif "when" not in given or resp.when is None:
            yield Problem(
                rpath, "a response needs when (+ result), or default (valid: when, default)"
            )
        elif "result" not in given:
            yield Problem(rpath, "when needs a result (what the tool returns when it matches)")
        elif params:
            valid = listing(sorted(params))
            for key in resp.when:
                if key not in params:
                    problem = f"{tool.name!r} has no parameter {key!r} (valid: {valid})"
                    yield Problem((*rpath, "when", key), problem, at_key=True)


def _over_cap(text: str, path: YPath) -> Iterator[Problem]:
    """A memory file written in a scenario must fit in the store (reference and initial)."""
    if len(text) > MEMORY_CAP:
        yield Problem(path, f"{len(text)} chars is over the {MEMORY_CAP}-char cap", at_key=True)


def _initial_memory(text: str, path: YPath) -> Iterator[Problem]:
    """The file a session starts from goes into the store as it is: under the cap, and in the
    skeleton (every section, in order) like the files the pipeline writes."""
    yield from _over_cap(text, path)
    if missing := missing_sections(text):
        yield Problem(
            path,
            f"not in the skeleton: missing or out of order {listing(missing)} "
            f"(valid: the sections {listing(SECTIONS)} in this order)",
            at_key=True,
        )


def _session(session: Session, path: YPath, known: Known) -> Iterator[Problem]:
    if session.reference_memory is not None:
        rpath = (*path, "reference_memory")
        if session.kind == "seed":
            yield Problem(rpath, "only eval sessions carry a reference memory", at_key=True)
        else:
            yield from _over_cap(session.reference_memory, rpath)
    if session.initial_memory is not None:
        yield from _initial_memory(session.initial_memory, (*path, "initial_memory"))
    for ti, turn in enumerate(session.turns):
        tpath = (*path, "turns", ti)
        if not turn.user.strip():
            yield Problem((*tpath, "user"), "the user message is empty")
        if session.kind == "seed":
            yield from _seed_turn(turn, tpath, known)
        else:
            yield from _eval_turn(turn, tpath, known)
        if turn.expect is not None:
            yield from _expect(turn.expect, (*tpath, "expect"), known)


def _seed_turn(turn: TurnSpec, path: YPath, known: Known) -> Iterator[Problem]:
    if turn.question is not None:
        yield Problem(
            (*path, "question"),
            "seed turns are replayed, not asked (move it to an eval session)",
            at_key=True,
        )
    if turn.expect is None:
        yield Problem(
            (*path, "expect"),
            "seed turns need expect (use unchanged: true when nothing should be kept)",
            at_key=True,
        )
    if not turn.transcript:
        yield Problem(
            (*path, "transcript"),
            "seed turns need a transcript ending in an assistant reply",
            at_key=True,
        )
    elif turn.transcript[-1].assistant is None:
        yield Problem(
            (*path, "transcript", len(turn.transcript) - 1),
            "a seed transcript ends with an assistant reply",
        )
    for si, step in enumerate(turn.transcript):
        yield from _step(step.model_fields_set, step.tool_call, (*path, "transcript", si), known)


def _step(
    given: set[str], call: dict[str, object] | None, path: YPath, known: Known
) -> Iterator[Problem]:
    if ("tool_call" in given) == ("assistant" in given):
        yield Problem(
            path, "a step is either tool_call (+ result) or assistant (valid: tool_call, assistant)"
        )
        return
    if "result" in given and "tool_call" not in given:
        yield Problem((*path, "result"), "result belongs to a tool_call step", at_key=True)
    if call is None:
        if "tool_call" in given:
            yield Problem((*path, "tool_call"), "expected a mapping {name, arguments}, got null")
        return
    cpath = (*path, "tool_call")
    for key in call:
        if key not in ("name", "arguments"):
            yield Problem((*cpath, key), "unknown key (valid: name, arguments)", at_key=True)
    name, args = call.get("name"), call.get("arguments", {})
    if not isinstance(name, str):
        yield Problem((*cpath, "name"), "a tool_call needs the tool's name (a string)", at_key=True)
    elif name not in known.tools:
        yield Problem((*cpath, "name"), _unknown_tool(name, known))
    if not isinstance(args, dict):
        yield Problem((*cpath, "arguments"), "expected a mapping of argument names to values")


def _eval_turn(turn: TurnSpec, path: YPath, known: Known) -> Iterator[Problem]:
    if turn.transcript:
        yield Problem(
            (*path, "transcript"),
            "eval turns are answered live (transcripts are for seed turns)",
            at_key=True,
        )
    if turn.question is None:
        yield Problem(
            (*path, "question"), "eval turns need a question (type, criterion, ...)", at_key=True
        )
    else:
        yield from _question(turn.question, (*path, "question"), known)


def _expect(expect: Expect, path: YPath, known: Known) -> Iterator[Problem]:
    yield from _fact_refs(expect.records, (*path, "records"), known)
    yield from _patterns(expect.forbids, (*path, "forbids"))


def _question(question: Question, path: YPath, known: Known) -> Iterator[Problem]:
    for gi, group in enumerate(question.answer_matches):
        gpath = (*path, "answer_matches", gi)
        if not group:
            yield Problem(gpath, "an empty group can never match (give at least one pattern)")
        yield from _patterns(group, gpath)
    yield from _patterns(question.answer_excludes, (*path, "answer_excludes"))
    for key in ("must_call", "must_not_call"):
        for i, name in enumerate(getattr(question, key)):
            if name not in known.tools:
                yield Problem((*path, key, i), _unknown_tool(name, known))
    for i, name in enumerate(question.must_not_call):
        if name in question.must_call:
            yield Problem((*path, "must_not_call", i), f"{name!r} is also in must_call")
    for name, wanted in question.call_matches.items():
        cpath: YPath = (*path, "call_matches", name)
        if name not in known.tools:
            yield Problem(cpath, _unknown_tool(name, known), at_key=True)
        elif name in question.must_not_call:
            yield Problem(cpath, f"{name!r} is also in must_not_call", at_key=True)
        if not wanted:
            yield Problem(cpath, "no arguments to match (give at least one argument: pattern)")
        for argument, pattern in wanted.items():
            if why := pattern_problem(pattern):
                yield Problem((*cpath, argument), why)
    yield from _fact_refs(question.facts, (*path, "facts"), known)
    if question.controls is not None:
        yield from _controls(question.controls, (*path, "controls"), known)


def _controls(controls: Controls, path: YPath, known: Known) -> Iterator[Problem]:
    for key, items in (("pass", controls.pass_), ("fail", controls.fail)):
        for i, item in enumerate(items):
            cpath: YPath = (*path, key, i)
            text = item if isinstance(item, str) else item.answer
            if not text.strip():
                where = cpath if isinstance(item, str) else (*cpath, "answer")
                yield Problem(where, "a control answer is empty")
            if isinstance(item, str):
                continue
            for ci, call in enumerate(item.tool_calls):
                if call.name not in known.tools:
                    where = (*cpath, "tool_calls", ci, "name")
                    yield Problem(where, _unknown_tool(call.name, known))


def _unknown_tool(name: str, known: Known) -> str:
    return f"unknown tool {name!r} (valid: {listing(sorted(known.tools))})"


def _fact_refs(refs: list[str], path: YPath, known: Known) -> Iterator[Problem]:
    for i, fid in enumerate(refs):
        if fid not in known.facts:
            yield Problem(
                (*path, i), f"unknown fact {fid!r} (valid: {listing(sorted(known.facts))})"
            )


def _patterns(patterns: list[str], path: YPath) -> Iterator[Problem]:
    for i, pattern in enumerate(patterns):
        if why := pattern_problem(pattern):
            yield Problem((*path, i), why)
