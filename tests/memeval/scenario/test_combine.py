"""Combined scenarios: prefixed ids and references, tools per session, order, nesting."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from memeval.errors import ScenarioError
from memeval.scenario.loader import resolve
from memeval.scenario.schema import ResolvedScenario

FIXTURES = Path(__file__).parent / "fixtures"
WriteYaml = Callable[[str, str], Path]


@pytest.fixture
def combo() -> ResolvedScenario:
    return resolve(FIXTURES / "combo.yaml")


def test_sessions_follow_order_with_prefixed_ids(combo: ResolvedScenario) -> None:
    assert [s.id for s in combo.sessions] == [
        "alpha/s1",
        "beta/s1",
        "alpha/s2",
        "own1",
        "beta/s2",
        "alpha/s3",
        "own2",
    ]
    assert [s.source for s in combo.sessions] == [
        "alpha",
        "beta",
        "alpha",
        "combo",
        "beta",
        "alpha",
        "combo",
    ]
    assert combo.turn_ids() == [
        "alpha/s1t1",
        "alpha/s1t2",
        "beta/s1t1",
        "alpha/s2t1",
        "own1t1",
        "beta/s2q1",
        "alpha/s3q1",
        "own2q1",
    ]


def test_the_combined_files_own_user_and_space_are_used(combo: ResolvedScenario) -> None:
    assert (combo.name, combo.user, combo.space) == ("combo", "dana", "everything")
    assert [Path(f).name for f in combo.files] == ["combo.yaml", "alpha.yaml", "beta.yaml"]


def test_fact_ids_and_references_are_prefixed(combo: ResolvedScenario) -> None:
    assert list(combo.facts) == [
        "both-projects",
        "alpha/seventy-rows",
        "alpha/eighty-rows",
        "beta/eu-only",
    ]
    assert combo.facts["alpha/seventy-rows"].until == "alpha/s2t1"
    assert combo.facts["both-projects"].until == "alpha/s3q1"  # own fact, included turn
    by_id = {t.id: t for s in combo.sessions for t in s.turns}
    assert by_id["alpha/s1t1"].expect is not None
    assert by_id["alpha/s1t1"].expect.records == ["alpha/seventy-rows"]
    assert by_id["own1t1"].expect is not None
    assert by_id["own1t1"].expect.records == ["both-projects", "alpha/eighty-rows"]
    assert by_id["alpha/s3q1"].question is not None
    assert by_id["alpha/s3q1"].question.facts == ["alpha/eighty-rows"]
    # every reference resolves to a fact of the combined scenario
    for turn in by_id.values():
        for fid in turn.expect.records if turn.expect else []:
            assert fid in combo.facts


def test_included_scenarios_are_not_changed_by_resolution(combo: ResolvedScenario) -> None:
    alpha = resolve(FIXTURES / "alpha.yaml")
    assert alpha.sessions[0].turns[0].id == "s1t1"
    assert alpha.sessions[0].turns[0].expect is not None
    assert alpha.sessions[0].turns[0].expect.records == ["seventy-rows"]


def test_tools_per_session(combo: ResolvedScenario) -> None:
    tools = {s.id: sorted(t.name for t in s.tools) for s in combo.sessions}
    assert tools["alpha/s1"] == ["create_dataset", "query_spans"]
    assert tools["beta/s2"] == ["search_docs"]
    everything = ["create_dataset", "list_projects", "query_spans", "search_docs"]
    assert tools["own1"] == everything
    assert tools["own2"] == everything
    assert sorted(t.name for t in combo.tools) == everything


def test_an_identical_tool_may_appear_twice(write_yaml: WriteYaml) -> None:
    beta = (FIXTURES / "beta.yaml").read_text()
    search_docs = beta[beta.index("  - name: search_docs") : beta.index("facts:")]
    combo = (FIXTURES / "combo.yaml").read_text().replace("tools:\n", "tools:\n" + search_docs)
    resolved = resolve(write_yaml("combo", combo))
    assert sorted(t.name for t in resolved.sessions[-1].tools) == [
        "create_dataset",
        "list_projects",
        "query_spans",
        "search_docs",
    ]


def test_nested_includes_stack_their_prefixes(write_yaml: WriteYaml) -> None:
    write_yaml(
        "inner",
        "name: inner\nuser: u\nspace: s\ninclude: [alpha]\norder: [alpha/s1, alpha/s2, alpha/s3]\n",
    )
    outer = resolve(
        write_yaml(
            "outer",
            "name: outer\nuser: o\nspace: t\ninclude: [inner, beta]\n"
            "order: [inner/alpha/s1, beta/s1, inner/alpha/s2,"
            " beta/s2, inner/alpha/s3]\n",
        )
    )
    assert [s.id for s in outer.sessions][:3] == ["inner/alpha/s1", "beta/s1", "inner/alpha/s2"]
    assert outer.sessions[0].source == "alpha"
    assert outer.facts["inner/alpha/seventy-rows"].until == "inner/alpha/s2t1"
    first = outer.sessions[0].turns[0]
    assert first.id == "inner/alpha/s1t1"
    assert first.expect is not None and first.expect.records == ["inner/alpha/seventy-rows"]


def test_a_self_include_is_a_cycle(write_yaml: WriteYaml) -> None:
    path = write_yaml("loop", "name: loop\nuser: u\nspace: s\ninclude: [loop]\norder: [loop/s1]\n")
    with pytest.raises(
        ScenarioError, match=r"loop\.yaml:4: include\[0\]: include cycle loop -> loop$"
    ):
        resolve(path)


def test_an_own_session_may_sit_anywhere_in_order(write_yaml: WriteYaml) -> None:
    text = (
        (FIXTURES / "combo.yaml")
        .read_text()
        .replace(
            "order: [alpha/s1, beta/s1, alpha/s2, own1, beta/s2, alpha/s3, own2]",
            "order: [own1, alpha/s1, beta/s1, alpha/s2, beta/s2, own2, alpha/s3]",
        )
    )
    resolved = resolve(write_yaml("combo", text))
    ids = [s.id for s in resolved.sessions]
    assert ids[0] == "own1"
    assert ids[-2:] == ["own2", "alpha/s3"]


def test_own_sessions_keep_their_file_order(write_yaml: WriteYaml) -> None:
    text = (
        (FIXTURES / "combo.yaml")
        .read_text()
        .replace(
            "order: [alpha/s1, beta/s1, alpha/s2, own1, beta/s2, alpha/s3, own2]",
            "order: [alpha/s1, beta/s1, alpha/s2, own2, beta/s2, alpha/s3, own1]",
        )
    )
    with pytest.raises(ScenarioError, match=r"order\[6\]: 'own1' must come before 'own2'"):
        resolve(write_yaml("combo", text))


def test_reference_memories_replace_an_included_sessions_reference(
    combo: ResolvedScenario,
) -> None:
    by_id = {s.id: s for s in combo.sessions}
    assert by_id["alpha/s3"].reference_memory is not None
    assert "- [user] Cite EU regulations only." in by_id["alpha/s3"].reference_memory
    assert by_id["beta/s2"].reference_memory is None  # no override: its own (none)
    alpha = resolve(FIXTURES / "alpha.yaml")
    assert alpha.sessions[2].reference_memory is not None
    assert "EU" not in alpha.sessions[2].reference_memory
