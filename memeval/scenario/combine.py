"""Combined scenarios: `include` + `order` flattened into one `ResolvedScenario`.

Rules: `order` is required with `include` and lists every session exactly once — included ones
as "scenario/session", own ones by id — keeping each scenario's sessions in their file order
(memory and reference files assume that order). Included ids get the prefix "<scenario>/";
an included session may call its scenario's tools, an own session every tool. Tool names must
be unique across the combined scenario unless the definitions are identical. An included eval
session's reference file describes memory in its own scenario; `reference_memories` replaces
it with the file a good pipeline holds at that point of the combined run. An included session
may not carry `initial_memory` (a validation problem): memory is shared across the combined run,
and setting a file would wipe every other scenario's facts.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from memeval.scenario.checks import Known
from memeval.scenario.problems import Problem, listing
from memeval.scenario.schema import (
    MEMORY_CAP,
    Fact,
    ResolvedScenario,
    ResolvedSession,
    Scenario,
    Tool,
    TurnSpec,
)
from memeval.scenario.yamlsource import YPath


@dataclass(frozen=True)
class Included:
    name: str
    resolved: ResolvedScenario


def known_for(scenario: Scenario, included: list[Included]) -> Known:
    facts = set(scenario.facts)
    for inc in included:
        facts |= {f"{inc.name}/{fid}" for fid in inc.resolved.facts}
    tools = {t.name for t in scenario.tools}
    for inc in included:
        tools |= {t.name for t in inc.resolved.tools}
    return Known(facts=frozenset(facts), tools=frozenset(tools))


def check_combined(scenario: Scenario, included: list[Included]) -> Iterator[Problem]:
    """Tool conflicts, `reference_memories` keys, and `order` naming every session once, in
    each scenario's order."""
    yield from _tool_conflicts(scenario, included)
    yield from _reference_memories(scenario, included)
    yield from _included_initial_memories(scenario, included)
    if not scenario.include:
        if scenario.order:
            yield Problem(
                ("order",), "only used with include (own sessions run in file order)", True
            )
        elif not scenario.sessions:
            yield Problem(("sessions",), "a scenario needs at least one session (or include)", True)
        return
    if not scenario.order:
        yield Problem(("include",), "needs order: every session once, as scenario/session", True)
        return
    yield from _order(scenario, _sessions_by_ref(scenario, included))


def _sessions_by_ref(scenario: Scenario, included: list[Included]) -> dict[str, str]:
    """Every session's order reference -> the scenario it comes from ("" for own sessions)."""
    refs = {f"{inc.name}/{s.id}": inc.name for inc in included for s in inc.resolved.sessions}
    refs.update({s.id: "" for s in scenario.sessions})
    return refs


def _order(scenario: Scenario, refs: dict[str, str]) -> Iterator[Problem]:
    listed: dict[str, int] = {}
    for i, ref in enumerate(scenario.order):
        head = ref.split("/", 1)[0]
        if ref in listed:
            yield Problem(("order", i), f"{ref!r} is listed twice (first at order[{listed[ref]}])")
        elif ref in refs:
            listed[ref] = i
        elif "/" in ref and head not in scenario.include:
            valid = listing(scenario.include)
            yield Problem(("order", i), f"{ref!r} names no included scenario (valid: {valid})")
        else:
            yield Problem(("order", i), f"no session {ref!r} (valid: {listing(refs)})")
    for ref in refs:
        if ref not in listed:
            yield Problem(
                ("order",), f"session {ref!r} is never listed (list each session once)", True
            )
    last: dict[str, str] = {}  # scenario -> its latest session seen so far in file order
    for ref in sorted(listed, key=listed.__getitem__):
        source = refs[ref]
        previous = last.get(source)
        if previous is not None and _file_index(refs, ref) < _file_index(refs, previous):
            yield Problem(
                ("order", listed[ref]),
                f"{ref!r} must come before {previous!r} (a scenario's sessions keep their order)",
            )
        else:
            last[source] = ref


def _reference_memories(scenario: Scenario, included: list[Included]) -> Iterator[Problem]:
    """Each key names an included eval session; each file fits under the cap."""
    evals = [
        f"{inc.name}/{s.id}" for inc in included for s in inc.resolved.sessions if s.kind == "eval"
    ]
    for ref, text in scenario.reference_memories.items():
        path: YPath = ("reference_memories", ref)
        if ref not in evals:
            yield Problem(
                path, f"{ref!r} is no included eval session (valid: {listing(evals)})", True
            )
        elif len(text) > MEMORY_CAP:
            yield Problem(path, f"{len(text)} chars is over the {MEMORY_CAP}-char cap", True)


def _included_initial_memories(scenario: Scenario, included: list[Included]) -> Iterator[Problem]:
    """An included session must not start from an initial file: memory is shared across the
    combined run, and setting it would overwrite every other scenario's facts."""
    for i, inc in enumerate(included):
        for session in inc.resolved.sessions:
            if session.initial_memory is not None:
                yield Problem(
                    ("include", i),
                    f"{inc.name}/{session.id} starts from initial_memory, which would overwrite"
                    " the memory the combined run shares (include scenarios without it)",
                )


def _file_index(refs: dict[str, str], ref: str) -> int:
    """Position of a session within its own scenario (refs keep each file's order)."""
    same = [r for r, source in refs.items() if source == refs[ref]]
    return same.index(ref)


def _tool_conflicts(scenario: Scenario, included: list[Included]) -> Iterator[Problem]:
    owners: dict[str, tuple[str, Tool]] = {t.name: ("this file", t) for t in scenario.tools}
    for i, inc in enumerate(included):
        for tool in inc.resolved.tools:
            owner = owners.setdefault(tool.name, (inc.name, tool))
            if owner[1] != tool:
                yield Problem(
                    ("include", i),
                    f"tool {tool.name!r} of {inc.name!r} differs from the one in {owner[0]} "
                    "(own sessions may call every tool, so names must be unique)",
                )


def all_tools(scenario: Scenario, included: list[Included]) -> list[Tool]:
    tools = {t.name: t for t in scenario.tools}
    for inc in included:
        for tool in inc.resolved.tools:
            tools.setdefault(tool.name, tool)
    return list(tools.values())


def build(scenario: Scenario, included: list[Included], path: str) -> ResolvedScenario:
    """The flat scenario: sessions in `order` (file order without include), ids prefixed."""
    tools = all_tools(scenario, included)
    sessions: dict[str, ResolvedSession] = {}
    facts: dict[str, Fact] = dict(scenario.facts)
    files = [path]
    for inc in included:
        prefix = inc.name + "/"
        for session in inc.resolved.sessions:
            ref = prefix + session.id
            sessions[ref] = _prefixed_session(session, prefix)
            if ref in scenario.reference_memories:
                sessions[ref].reference_memory = scenario.reference_memories[ref]
        for fid, fact in inc.resolved.facts.items():
            until = prefix + fact.until if fact.until else None
            facts[prefix + fid] = fact.model_copy(update={"until": until})
        files += [f for f in inc.resolved.files if f not in files]
    for own in scenario.sessions:
        sessions[own.id] = ResolvedSession(
            id=own.id,
            source=scenario.name,
            kind=own.kind,
            title=own.title,
            reference_memory=own.reference_memory,
            initial_memory=own.initial_memory,
            think_time_s=own.think_time_s,
            tools=tools,
            turns=[t.model_copy(deep=True) for t in own.turns],
        )
    order = scenario.order or [s.id for s in scenario.sessions]
    return ResolvedScenario(
        name=scenario.name,
        title=scenario.title,
        user=scenario.user,
        space=scenario.space,
        path=path,
        facts=facts,
        sessions=[sessions[ref] for ref in order],
        description=scenario.description,
        files=files,
        tools=tools,
    )


def _prefixed_session(session: ResolvedSession, prefix: str) -> ResolvedSession:
    return session.model_copy(
        update={
            "id": prefix + session.id,
            "turns": [_prefixed_turn(t, prefix) for t in session.turns],
        }
    )


def _prefixed_turn(turn: TurnSpec, prefix: str) -> TurnSpec:
    turn = turn.model_copy(deep=True, update={"id": prefix + turn.id})
    if turn.expect is not None:
        turn.expect.records = [prefix + fid for fid in turn.expect.records]
    if turn.question is not None:
        turn.question.facts = [prefix + fid for fid in turn.question.facts]
    return turn
