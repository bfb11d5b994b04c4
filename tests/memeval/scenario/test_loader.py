"""Loading single files: positions in errors, safe YAML, finding scenarios by name or path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import memeval
from memeval.errors import ScenarioError
from memeval.scenario import locate
from memeval.scenario.loader import find, list_bundled, load_file, resolve
from memeval.scenario.schema import ResolvedScenario, Scenario
from memeval.scenario.yamlsource import display_path

FIXTURES = Path(__file__).parent / "fixtures"
WriteYaml = Callable[[str, str], Path]

MINIMAL = """\
name: tiny
user: u
space: s
facts:
  f1: {match: ["x"]}
sessions:
  - id: s1
    kind: seed
    turns:
      - id: t1
        user: "hello"
        transcript: [{assistant: "hi"}]
        expect: {records: [f1]}
"""


def error_of(path: Path) -> str:
    with pytest.raises(ScenarioError) as caught:
        resolve(path)
    return str(caught.value)


def test_load_file_returns_the_parsed_scenario() -> None:
    scenario = load_file(FIXTURES / "alpha.yaml")
    assert isinstance(scenario, Scenario)
    assert scenario.name == "alpha"
    assert scenario.facts["seventy-rows"].until == "s2t1"
    assert [s.kind for s in scenario.sessions] == ["seed", "seed", "eval"]


def test_load_file_checks_references_of_a_combined_file(write_yaml: WriteYaml) -> None:
    text = (FIXTURES / "combo.yaml").read_text().replace("alpha/eighty-rows]", "alpha/ninety]")
    path = write_yaml("combo", text)
    with pytest.raises(ScenarioError, match=r"unknown fact 'alpha/ninety'"):
        load_file(path)


def test_the_earliest_problem_in_the_file_is_reported(write_yaml: WriteYaml) -> None:
    text = MINIMAL.replace("records: [f1]", "records: [f2]").replace(
        'match: ["x"]', 'match: ["//"]'
    )
    path = write_yaml("tiny", text)
    assert error_of(path).endswith(
        ":5: facts.f1.match[0]: empty regex '//' (it would match any text)"
    )


def test_a_missing_key_points_at_its_list_item(write_yaml: WriteYaml) -> None:
    path = write_yaml("tiny", MINIMAL.replace('        user: "hello"\n', ""))
    assert error_of(path).endswith(":10: sessions[s1].turns[t1].user: required key is missing")


def test_yaml_is_loaded_safely(write_yaml: WriteYaml) -> None:
    path = write_yaml(
        "tiny", MINIMAL.replace("space: s", "space: !!python/object/apply:os.getcwd []")
    )
    message = error_of(path)
    assert ":3: invalid YAML: could not determine a constructor" in message


def test_several_documents_are_refused(write_yaml: WriteYaml) -> None:
    path = write_yaml("tiny", MINIMAL + "---\nname: other\n")
    assert "invalid YAML: but found another document" in error_of(path)


def test_messages_stay_on_one_line(write_yaml: WriteYaml) -> None:
    path = write_yaml("tiny", MINIMAL.replace("id: s1", 'id: "s1\\nrm -rf"'))
    message = error_of(path)
    assert "\n" not in message
    assert message.endswith(
        r"sessions[s1\nrm -rf].id: 's1\nrm -rf' is not a valid id "
        r"(letters, digits, '.', '_', '-'; no '/')"
    )


def test_a_path_outside_the_working_dir_is_shown_whole(
    write_yaml: WriteYaml, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(FIXTURES)
    path = write_yaml("tiny", MINIMAL.replace("records: [f1]", "records: [nope]"))
    assert error_of(path).startswith(f"{path}:13: ")


def test_find_takes_paths_and_refuses_missing_ones(tmp_path: Path) -> None:
    assert find(FIXTURES / "alpha.yaml") == FIXTURES / "alpha.yaml"
    assert find(str(FIXTURES / "alpha.yaml")) == FIXTURES / "alpha.yaml"
    with pytest.raises(ScenarioError, match=r"no-such\.yaml: no such scenario file"):
        find(str(tmp_path / "no-such.yaml"))


def test_find_by_name_searches_the_env_path_first(
    only_env_dirs: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = tmp_path / "own"
    own.mkdir()
    (own / "alpha.yaml").write_text(MINIMAL.replace("tiny", "alpha"))
    monkeypatch.setenv(locate.ENV_VAR, f"{own}:{FIXTURES}")
    assert find("alpha") == own / "alpha.yaml"
    assert find("beta") == FIXTURES / "beta.yaml"
    assert [p.stem for p in list_bundled()] == ["alpha", "beta", "combo", "wrongly-named"]
    assert list_bundled()[0] == own / "alpha.yaml"


def test_an_unknown_name_lists_the_known_ones(only_env_dirs: None) -> None:
    with pytest.raises(ScenarioError) as caught:
        find("gamma")
    assert str(caught.value) == (
        "unknown scenario 'gamma' (valid: alpha, beta, combo, wrongly-named; "
        "or a path to a .yaml file)"
    )


def test_running_from_a_checkout_finds_the_repo_scenarios() -> None:
    repo = Path(memeval.__file__).resolve().parents[1]
    assert (repo / "pyproject.toml").is_file()
    assert repo / "scenarios" in locate.search_dirs()


def test_an_installed_package_finds_its_bundled_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "site-packages" / "memeval"
    (package / "_scenarios").mkdir(parents=True)
    (package / "_scenarios" / "tiny.yaml").write_text(MINIMAL)
    monkeypatch.setattr(locate, "package_dir", lambda: package)
    monkeypatch.delenv(locate.ENV_VAR, raising=False)
    assert locate.search_dirs() == [package / "_scenarios"]
    resolved = resolve("tiny")
    assert resolved.name == "tiny"
    assert resolved.path == display_path(package / "_scenarios" / "tiny.yaml")


def test_a_plain_scenario_resolves_without_prefixes() -> None:
    resolved = resolve(FIXTURES / "alpha.yaml")
    assert [s.id for s in resolved.sessions] == ["s1", "s2", "s3"]
    assert {s.source for s in resolved.sessions} == {"alpha"}
    assert resolved.turn_ids() == ["s1t1", "s1t2", "s2t1", "s3q1"]
    assert [t.name for t in resolved.sessions[2].tools] == ["create_dataset", "query_spans"]
    assert resolved.sessions[2].reference_memory is not None
    assert resolved.sessions[2].reference_memory.startswith("## User Profile\n")


def test_the_resolved_form_survives_a_json_round_trip() -> None:
    resolved = resolve(FIXTURES / "combo.yaml")
    again = ResolvedScenario.model_validate_json(resolved.model_dump_json())
    assert again == resolved


def test_an_unknown_include_lists_sibling_and_named_scenarios(
    only_env_dirs: None, write_yaml: WriteYaml
) -> None:
    path = write_yaml("mix", "name: mix\nuser: u\nspace: s\ninclude: [alpah]\norder: []\n")
    valid = "alpha, beta, combo, wrongly-named"
    problem = f"include[0]: unknown scenario 'alpah' (valid: {valid})"
    assert error_of(path) == f"{display_path(path)}:4: {problem}"
