"""Validation of a session's `initial_memory`: the cap and skeleton rules of memory files
written in a scenario, and no initial file on a session a combined scenario includes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from memeval.errors import ScenarioError
from memeval.scenario.loader import resolve
from memeval.scenario.yamlsource import display_path
from reference_memory import SKELETON

WriteYaml = Callable[[str, str], Path]


def scenario(name: str, initial: str) -> str:
    body = "\n".join("      " + line if line else "" for line in initial.splitlines())
    return f"""name: {name}
user: dana
space: acme
facts:
  seventy-rows:
    match: ["70 rows"]
    user_tagged: true
sessions:
  - id: s1
    kind: seed
    initial_memory: |
{body}
    turns:
      - id: s1t1
        user: "Datasets should always have exactly 70 rows."
        transcript:
          - assistant: "Noted: 70 rows."
        expect:
          records: [seventy-rows]
"""


def error_of(path: Path) -> str:
    with pytest.raises(ScenarioError) as caught:
        resolve(path)
    return str(caught.value)


GOOD = SKELETON.replace("## Conventions\n", "## Conventions\n- [user] Datasets have 70 rows.\n")


def test_a_session_carries_its_initial_file_into_the_resolved_scenario(
    write_yaml: WriteYaml,
) -> None:
    resolved = resolve(write_yaml("init", scenario("init", GOOD)))
    assert resolved.sessions[0].initial_memory == GOOD


def test_an_initial_file_over_the_cap_is_a_problem_at_its_key(write_yaml: WriteYaml) -> None:
    big = GOOD.replace("## Assets\n", "## Assets\n" + "- a durable asset line\n" * 400)
    path = write_yaml("big", scenario("big", big))
    size = len(big)
    assert size > 8000
    assert error_of(path) == (
        f"{display_path(path)}:11: sessions[s1].initial_memory: {size} chars is over the"
        " 8000-char cap"
    )


def test_an_initial_file_without_the_skeleton_is_a_problem(write_yaml: WriteYaml) -> None:
    loose = "## User Profile\n- Dana.\n\n## Conventions\n- [user] Datasets have 70 rows.\n"
    path = write_yaml("loose", scenario("loose", loose))
    assert error_of(path) == (
        f"{display_path(path)}:11: sessions[s1].initial_memory: not in the skeleton: missing"
        " or out of order Goals, Projects, Assets, Interaction corrections (valid: the sections"
        " User Profile, Goals, Projects, Assets, Conventions, Interaction corrections in this"
        " order)"
    )


def test_a_combined_scenario_may_not_include_a_session_with_an_initial_file(
    write_yaml: WriteYaml,
) -> None:
    write_yaml("init", scenario("init", GOOD))
    path = write_yaml(
        "mix", "name: mix\nuser: dana\nspace: acme\ninclude: [init]\norder: [init/s1]\n"
    )
    assert error_of(path) == (
        f"{display_path(path)}:4: include[0]: init/s1 starts from initial_memory, which would"
        " overwrite the memory the combined run shares (include scenarios without it)"
    )
