"""The regression gate and JUnit output on hand-made, graded run directories."""

from __future__ import annotations

import asyncio
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memeval.cli import app
from memeval.gate import GateConfig, check_gate, fisher_one_sided
from memeval.junit import write_junit
from memeval.rundir.results import load_results
from tests.memeval.rundirs import RunDirBuilder, grade_and_save, memory

QUESTION = {
    "type": "memory-dependent",
    "criterion": "Cites 0.648.",
    "answer_matches": [["0.648"]],
}


def graded_run(path: Path, outcomes: list[list[bool]], run_id: str = "run") -> Path:
    """One scenario; `outcomes[r][q]` says whether question q passes in repeat r."""
    run = RunDirBuilder(path, run_id=run_id)
    sc = run.scenario("book", facts={"score": {"match": ["0.648"]}})
    for repeat, answers in enumerate(outcomes):
        sc.turn(
            "s1t1",
            repeat=repeat,
            file=memory(Goals=["- v2 scored 0.648"]),
            expect={"records": ["score"]},
        )
        for q, passes in enumerate(answers):
            answer = "It scored 0.648." if passes else "I do not remember."
            sc.turn(
                f"s2q{q}",
                session="s2",
                kind="eval",
                repeat=repeat,
                answer=answer,
                question=QUESTION,
            )
    run_dir = run.write()
    asyncio.run(grade_and_save(run_dir))
    return run_dir


def gate(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["gate", *map(str, args)])
    return result.exit_code, result.stdout, result.stderr


def test_fisher_matches_the_tea_tasting_example() -> None:
    # 4 of 4 vs 1 of 4 cups... the classic 2x2 [[3, 1], [1, 3]]: one-sided p = 17/70
    assert fisher_one_sided(3, 4, 1, 4) == pytest.approx(17 / 70)
    assert fisher_one_sided(4, 4, 4, 4) == pytest.approx(1.0)


def test_an_identical_run_passes_the_gate(tmp_path: Path) -> None:
    base = graded_run(tmp_path / "base", [[True, True, True, False]])
    same = graded_run(tmp_path / "same", [[True, True, True, False]])
    code, out, _ = gate(same, "--baseline", base)
    assert code == 0, out
    assert "no regression" in out and "memory_dependent" in out


def test_one_fewer_passing_memory_dependent_question_fails_the_gate(tmp_path: Path) -> None:
    base = graded_run(tmp_path / "base", [[True, True, True, True]])
    worse = graded_run(tmp_path / "worse", [[True, True, False, True]])
    report = check_gate(load_results(worse), base)
    [regression] = report.regressions
    assert (regression.scenario, regression.metric) == ("book", "memory_dependent")
    assert (regression.baseline, regression.current) == ("4/4", "3/4")
    code, _out, err = gate(worse, "--baseline", base)
    assert code == 1
    assert "regression: book memory_dependent" in err


def test_a_single_flip_among_five_repeats_is_noise_but_a_real_drop_is_not(tmp_path: Path) -> None:
    base = graded_run(tmp_path / "base", [[True] * 4 for _ in range(5)])
    flip = [[True] * 4 for _ in range(5)]
    flip[3][2] = False
    one_flip = graded_run(tmp_path / "flip", flip)
    report = check_gate(load_results(one_flip), base)
    delta = next(d for d in report.deltas if d.metric == "memory_dependent")
    assert (delta.baseline, delta.current, delta.status) == ("20/20", "19/20", "ok")
    assert delta.p_value == pytest.approx(0.5) and "within noise" in delta.note
    assert gate(one_flip, "--baseline", base)[0] == 0

    collapse = graded_run(tmp_path / "collapse", [[True, False, False, True]] * 5)
    report = check_gate(load_results(collapse), base)
    assert [d.metric for d in report.regressions] == ["memory_dependent"]
    [regression] = report.regressions
    assert regression.p_check is not None and regression.p_check < 0.001
    # the repeat-level test can go no lower than 1 / C(5 + 5, 5): the five run repeats are
    # the five lowest of ten
    assert regression.p_repeat == pytest.approx(1 / 252) == regression.p_value


def test_thresholds_are_configurable(tmp_path: Path) -> None:
    base = graded_run(tmp_path / "base", [[True, True, True, True]])
    worse = graded_run(tmp_path / "worse", [[True, True, False, True]])
    assert check_gate(load_results(worse), base, GateConfig(max_drop=0.3)).regressions == []
    assert gate(worse, "--baseline", base, "--max-drop", "0.3")[0] == 0
    code, _, err = gate(worse, "--baseline", base, "--alpha", "7")
    assert code == 2 and err.strip().startswith("error: --alpha 7.0 must be between 0 and 1")


def test_a_committed_baseline_json_works_like_the_run(tmp_path: Path) -> None:
    base = graded_run(tmp_path / "base", [[True, True, True, True]])
    file = tmp_path / "baseline.json"
    code, _out, _ = gate(base, "--write-baseline", file)
    assert code == 0 and file.is_file()
    data = json.loads(file.read_text())
    assert data["kind"] == "memeval-baseline" and data["metrics"][0]["scenario"] == "book"
    worse = graded_run(tmp_path / "worse", [[True, False, True, True]])
    assert gate(base, "--baseline", file)[0] == 0
    assert gate(worse, "--baseline", file)[0] == 1


def test_bad_baselines_and_ungraded_runs_are_one_line_errors(tmp_path: Path) -> None:
    run = graded_run(tmp_path / "run", [[True]])
    junk = tmp_path / "junk.json"
    junk.write_text('{"hello": 1}')
    for baseline, message in [
        (tmp_path / "missing", "no such run directory"),
        (junk, "not a baseline JSON"),
    ]:
        code, _, err = gate(run, "--baseline", baseline)
        assert code == 2 and len(err.strip().splitlines()) == 1 and message in err
    (run / "verdicts.json").unlink()
    code, _, err = gate(run, "--baseline", run)
    assert code == 2 and "not graded" in err and "memeval grade" in err


def test_junit_has_a_case_per_question_and_write_with_evidence(tmp_path: Path) -> None:
    run = graded_run(tmp_path / "run", [[True, False]])
    path = write_junit(load_results(run), tmp_path / "out" / "junit.xml")
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    # the eval turns' writes are checked too (retention of the fact s1t1 recorded)
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("5", "1", "0")
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert set(cases) == {
        "s1t1 write",
        "s2q0 write",
        "s2q0 question (memory-dependent)",
        "s2q1 write",
        "s2q1 question (memory-dependent)",
    }
    failure = cases["s2q1 question (memory-dependent)"].find("failure")
    assert failure is not None and failure.get("message", "").startswith("[check] failed:")
    assert "none of ['0.648'] in the answer" in (failure.text or "")
    code, _out, _ = gate(run, "--junit", tmp_path / "cli.xml")
    assert code == 0 and ET.parse(tmp_path / "cli.xml").getroot().get("tests") == "5"


def test_junit_keeps_hostile_scenario_and_model_text_as_text(tmp_path: Path) -> None:
    from tests.memeval.rundirs import build_sample_run

    run = build_sample_run(tmp_path / "run", hostile=True)
    asyncio.run(grade_and_save(run))
    path = write_junit(load_results(run), tmp_path / "junit.xml")
    root = ET.parse(path).getroot()  # parses: every string was escaped
    assert root.find(".//script") is None
    failures = [f.text or "" for f in root.iter("failure")]
    assert any('<script>alert("x")</script>' in f for f in failures)  # kept, as text
    assert "<script>" not in path.read_text(encoding="utf-8")
