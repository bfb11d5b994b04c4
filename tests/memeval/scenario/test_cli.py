"""`memeval scenarios list | validate | show | schema` through typer's CliRunner."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memeval.cli import app
from memeval.scenario.jsonschema import scenario_json_schema
from memeval.scenario.yamlsource import display_path

FIXTURES = Path(__file__).parent / "fixtures"
WriteYaml = Callable[[str, str], Path]


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["scenarios", *args], env={"COLUMNS": "200"})
    return result.exit_code, result.stdout, result.stderr


def shown(name: str) -> str:
    return display_path(FIXTURES / f"{name}.yaml")


def test_validate_prints_one_ok_line_per_file() -> None:
    code, out, err = run("validate", str(FIXTURES / "alpha.yaml"), str(FIXTURES / "combo.yaml"))
    assert code == 0, err
    assert out.splitlines() == [
        f"OK {shown('alpha')} (alpha: 3 sessions, 4 turns, 1 questions, 2 facts)",
        f"OK {shown('combo')} (combo: 7 sessions, 8 turns, 3 questions, 4 facts)",
    ]


def test_validate_without_paths_checks_every_scenario_found_by_name(only_env_dirs: None) -> None:
    code, out, err = run("validate")
    assert code == 0, err
    assert [line.split()[1] for line in out.splitlines()] == [
        shown(name) for name in ("alpha", "beta", "combo", "wrongly-named")
    ]


def test_list_shows_counts_per_question_type(only_env_dirs: None) -> None:
    code, out, _ = run("list")
    assert code == 0
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if "│" in line}
    cells = [c.strip() for c in rows["combo"].split("│")[1:-1]]
    assert cells == ["combo", "Alpha and beta in one memory", "7", "8", "2", "1"]
    assert [c.strip() for c in rows["beta"].split("│")[3:7]] == ["2", "2", "1", "0"]


def test_list_flags_an_invalid_scenario(
    only_env_dirs: None, write_yaml: WriteYaml, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = write_yaml("broken", "name: broken\nuser: u\n")
    monkeypatch.setenv("MEMEVAL_SCENARIO_PATH", str(bad.parent))
    code, out, err = run("list")
    assert code == 2
    assert "invalid (see below)" in out
    assert err == f"error: {display_path(bad)}:1: space: required key is missing\n"


def test_show_prints_sessions_questions_facts_and_tools() -> None:
    code, out, err = run("show", str(FIXTURES / "combo.yaml"))
    assert code == 0, err
    for text in (
        "alpha/s1 [seed]",
        "own2 [eval]",
        "memory-corruptible",
        "alpha/s3q1",
        "records alpha/seventy-rows",
        "beta/eu-only",
        "list_projects",
        "search_docs",
    ):
        assert text in out
    assert out.index("alpha/s1 [seed]") < out.index("beta/s1 [seed]") < out.index("own2 [eval]")


def test_show_prints_scenario_text_literally(write_yaml: WriteYaml) -> None:
    text = (
        (FIXTURES / "beta.yaml")
        .read_text()
        .replace("Only cite EU regulations in answers.", "[bold red]Loud[/bold red] [user] text")
    )
    code, out, err = run("show", str(write_yaml("beta", text)))
    assert code == 0, err
    assert "[bold red]Loud[/bold red] [user] text" in out


def test_show_of_an_unknown_name_is_one_line_and_exit_2(only_env_dirs: None) -> None:
    code, out, err = run("show", "gamma")
    assert code == 2
    assert out == ""
    assert err == (
        "error: unknown scenario 'gamma' (valid: alpha, beta, combo, wrongly-named; "
        "or a path to a .yaml file)\n"
    )


def test_schema_prints_the_json_schema() -> None:
    code, out, _ = run("schema")
    assert code == 0
    assert json.loads(out) == scenario_json_schema()
