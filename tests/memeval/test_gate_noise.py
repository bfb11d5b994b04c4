"""A gate that knows noise: flaky checks, checks that broke, the exact tests, and resampled
re-runs of stored outcomes (no model is run)."""

from __future__ import annotations

import asyncio
import json
import random
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memeval.baseline import Baseline, CheckHistory, load_baseline
from memeval.cli import app
from memeval.gate import GateConfig, check_gate, compare_checks
from memeval.gate_view import status_text
from memeval.resample import metrics_from_checks, resample
from memeval.rundir.record import read_run
from memeval.rundir.record import write_run as save_info
from memeval.rundir.results import load_results
from tests.memeval.noise_profile import Profile, outcomes, write_run
from tests.memeval.rundirs import grade_and_save

ROOT = Path(__file__).resolve().parents[2]


def histories(rows: dict[str, str], kind: str = "question") -> list[CheckHistory]:
    """{"q0": "PFPFP", ...}: one check per entry, P = pass and F = fail in each repeat."""
    metric = "write_match" if kind == "write" else "memory_dependent"
    return [
        CheckHistory(
            scenario="book",
            turn=turn,
            index=i,
            kind=kind,
            metric=metric,
            outcomes=["pass" if c == "P" else "fail" for c in pattern],
        )
        for i, (turn, pattern) in enumerate(rows.items())
    ]


def graded(path: Path, rows: dict[str, str]) -> Path:
    run_dir = write_run(path, histories(rows), run_id=path.name)
    asyncio.run(grade_and_save(run_dir))
    return run_dir


def gate(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["gate", *map(str, args)], env={"COLUMNS": "250"})
    return result.exit_code, result.stdout, result.stderr


def test_checks_flaky_in_the_baseline_never_fail_the_gate_alone(tmp_path: Path) -> None:
    flaky = {f"q{i}": "PFPFP"[i % 2 :] + "PFPFP"[: i % 2] for i in range(6)}
    base = graded(tmp_path / "base", {**flaky, "q8": "PPPPP", "q9": "PPPPP"})
    run = graded(tmp_path / "run", {**{k: "FFF" for k in flaky}, "q8": "PPP", "q9": "PPP"})
    report = check_gate(load_results(run), base)
    delta = next(d for d in report.deltas if d.metric == "memory_dependent")
    # the drop is far beyond chance by both tests, but only flaky checks failed
    assert delta.p_check is not None and delta.p_check < 0.001
    assert delta.p_repeat == pytest.approx(1 / 56)
    assert delta.status == "ok" and "only flaky checks failed" in delta.note
    assert sorted(f.check for f in report.flaky) == [f"q{i} question" for i in range(6)]
    assert {f.baseline for f in report.flaky} == {"3/5 pass"}
    code, out, _ = gate(run, "--baseline", base)
    assert code == 0
    assert "flaky in the baseline: listed, never failing the gate alone" in out


def test_a_check_stable_in_the_baseline_that_now_fails_is_a_regression(tmp_path: Path) -> None:
    base = graded(tmp_path / "base", {f"q{i}": "PPPPP" for i in range(4)})
    run = graded(tmp_path / "run", {"q0": "PPP", "q1": "FFF", "q2": "PPP", "q3": "PPP"})
    report = check_gate(load_results(run), base)
    [regression] = report.regressions
    assert regression.test == "check+repeat"
    assert regression.broken == ["q1 question 5/5 pass → 0/3 pass"]
    assert regression.p_value is not None and regression.p_value < 0.05
    code, out, err = gate(run, "--baseline", base)
    assert code == 1 and "regression: book memory_dependent" in err
    assert "newly failing: q1 question 5/5 pass → 0/3 pass" in out
    assert "exact tests by check and by repeat" in out

    # the same failure of a check that already flipped in the baseline is noise, and a flaky
    # check's spread hides one broken check from the repeat-level test
    flaky = graded(tmp_path / "flaky", {"q0": "PPPPP", "q1": "PPPPP", "q2": "PPPPP", "q3": "PFPFP"})
    noise = graded(tmp_path / "noise", {"q0": "PPP", "q1": "PPP", "q2": "PPP", "q3": "FFF"})
    assert check_gate(load_results(noise), flaky).regressions == []
    both = graded(tmp_path / "both", {"q0": "PPP", "q1": "FFF", "q2": "PPP", "q3": "PFP"})
    [delta] = [d for d in check_gate(load_results(both), flaky).deltas if d.broken]
    assert delta.status == "ok" and delta.p_repeat == pytest.approx(6 / 56)


def test_too_few_repeats_for_the_repeat_test_is_said(tmp_path: Path) -> None:
    base = graded(tmp_path / "base", {f"q{i}": "P" for i in range(6)})
    run = graded(tmp_path / "run", {f"q{i}": "FFF" if i < 3 else "PPP" for i in range(6)})
    report = check_gate(load_results(run), base)
    [delta] = [d for d in report.deltas if d.metric == "memory_dependent"]
    assert delta.test == "check" and delta.p_repeat is None
    assert (
        "too few repeats for the repeat-level test (1 + 3 repeats: smallest p 0.25)" in delta.note
    )
    # three checks that passed once and now fail three times: (1/4)^3 by check
    assert delta.p_check == pytest.approx(1 / 64) and delta.status == "regression"


def test_one_repeat_on_both_sides_is_strict(tmp_path: Path) -> None:
    base = graded(tmp_path / "base", {"q0": "P", "q1": "P", "q2": "F"})
    run = graded(tmp_path / "run", {"q0": "P", "q1": "F", "q2": "F"})
    [regression] = check_gate(load_results(run), base).regressions
    assert regression.test == "strict" and regression.p_value is None
    assert regression.broken == ["q1 question pass → fail"]


def test_checks_that_changed_are_named_both_ways(tmp_path: Path) -> None:
    """Equal rates can hide a swap: one check fixed, another broken. Both are named."""
    base = graded(tmp_path / "base", {"q0": "P", "q1": "F", "q2": "P"})
    run = graded(tmp_path / "run", {"q0": "P", "q1": "P", "q2": "F"})
    [delta] = [
        d for d in check_gate(load_results(run), base).deltas if d.metric == "memory_dependent"
    ]
    assert delta.status == "ok" and delta.change == "0"
    assert delta.fixed == ["q1 question fail → pass"]
    assert delta.broken == ["q2 question pass → fail"]
    code, out, _ = gate(run, "--baseline", base)
    assert code == 0
    assert "newly passing: q1 question fail → pass" in out
    assert "newly failing: q2 question pass → fail" in out
    assert status_text(delta) == (
        "ok (newly failing: q2 question pass → fail; newly passing: q1 question fail → pass)"
    )
    # with repeats: fixed only when it failed every baseline repeat and passes every run repeat
    base = graded(tmp_path / "base5", {"q0": "FFFFF", "q1": "FPFFF", "q2": "FFFFF"})
    run = graded(tmp_path / "run3", {"q0": "PPP", "q1": "PPP", "q2": "PPF"})
    [delta] = [
        d for d in check_gate(load_results(run), base).deltas if d.metric == "memory_dependent"
    ]
    assert delta.status == "improved" and delta.fixed == ["q0 question 0/5 pass → 3/3 pass"]


def test_an_old_baseline_file_is_read_and_says_what_it_lacks(tmp_path: Path) -> None:
    # the committed baseline as it was written before checks, fingerprints and health
    data = json.loads((ROOT / "ci" / "memeval-baseline.json").read_text(encoding="utf-8"))
    for later in ("checks", "fingerprint", "health"):
        data.pop(later, None)
    before = tmp_path / "before.json"
    before.write_text(json.dumps(data), encoding="utf-8")
    _, baseline = load_baseline(before)
    assert baseline.checks == [] and baseline.fingerprint is None and baseline.health is None
    assert baseline.metrics
    # an old file with repeats gates on pooled counts, as before
    old = {k: v for k, v in Baseline(run_id="old", repeats=5, metrics=[]).model_dump().items()}
    row = metrics_from_checks(histories({f"q{i}": "PPPPP" for i in range(4)}))[0]
    old.pop("checks"), old.pop("fingerprint"), old.pop("command")
    old["metrics"] = [row.model_dump()]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old), encoding="utf-8")
    run = graded(tmp_path / "run", {"q0": "FFFFF", "q1": "FFFFF", "q2": "PPPPP", "q3": "PPPPP"})
    report = check_gate(load_results(run), path)
    [regression] = report.regressions
    assert regression.test == "pooled" and regression.broken == []
    assert any("no per-check history" in n for n in report.notes)
    assert [d.part for d in report.differences] == ["fingerprint"]
    code, out, _ = gate(run, "--baseline", path)
    assert code == 1 and "neither the baseline nor this run has one" in out


def test_rows_are_a_scenario_and_a_memory_system() -> None:
    def rows(system: str, pattern: str) -> list[CheckHistory]:
        return [
            h.model_copy(update={"system": system})
            for h in histories({f"q{i}": pattern for i in range(3)})
        ]

    base = [*rows("file", "P"), *rows("retrieval", "P"), *rows("none", "F")]
    run = [*rows("file", "P"), *rows("retrieval", "F")]
    baseline = Baseline(run_id="b", metrics=metrics_from_checks(base), checks=base)
    report = compare_checks(metrics_from_checks(run), run, baseline)
    assert [(d.scenario, d.metric) for d in report.regressions] == [
        ("book · retrieval", "memory_dependent")
    ]
    missing = [d for d in report.deltas if d.status == "missing"]
    assert [d.scenario for d in missing] == ["book · none"]


# --- resampled re-runs of stored outcomes ------------------------------------------------------


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> list[CheckHistory]:
    """Ten repeats of a combined-sized suite under the divergence noise model (half of the
    repeats depart at a random turn, after which each check flips with probability 0.3),
    written as a run, graded and saved as a baseline by the CLI: the stored outcomes."""
    root = tmp_path_factory.mktemp("stored")
    simulated = outcomes(Profile(), 10, seed=1)
    run_dir = write_run(root / "run", simulated)
    asyncio.run(grade_and_save(run_dir))
    code, _, _ = gate(run_dir, "--write-baseline", root / "baseline.json")
    assert code == 0
    _, baseline = load_baseline(root / "baseline.json")
    # 57 turns write-checked (retention on every turn after the first fact) plus 30 questions
    assert baseline.repeats == 10 and len(baseline.checks) == 87
    wanted = {(h.turn, h.kind): h.outcomes for h in simulated}
    for check in baseline.checks:  # graded exactly as simulated; eval turns' writes all pass
        expected = wanted.get((check.turn, check.kind), ["pass"] * 10)
        assert check.outcomes == expected, check
    assert sum(c.flaky for c in baseline.checks) > 20  # noisy indeed
    return baseline.checks


def test_the_recommended_setting_passes_an_unchanged_commit_100_of_100(
    stored: list[CheckHistory],
) -> None:
    # README: baseline from --repeat 5, CI runs --repeat 3, alpha 0.05
    assert resample(stored, 5, 3, trials=100, seed=7).passed == 100


def test_a_one_repeat_baseline_fails_unchanged_commits_under_noise(
    stored: list[CheckHistory],
) -> None:
    # one repeat each: every flip counts, so an unchanged commit fails whenever a run diverges
    strict = resample(stored, 1, 1, trials=100, seed=7)
    assert strict.failed >= 30


def test_the_recommended_setting_catches_a_check_that_always_fails_now(
    stored: list[CheckHistory],
) -> None:
    def break_two(run: list[CheckHistory]) -> list[CheckHistory]:
        rng = random.Random(len(run))
        always = [c.key for c in run if c.passed == len(c.outcomes)]
        picked = set(rng.sample(always, 2))
        return [
            c.model_copy(update={"outcomes": ["fail"] * len(c.outcomes)}) if c.key in picked else c
            for c in run
        ]

    quiet = outcomes(Profile(diverge=0.0), 8, seed=1)  # a deterministic back end
    assert resample(quiet, 5, 3, trials=20, change=break_two).failed == 20
    noisy = resample(stored, 5, 3, trials=100, seed=7, change=break_two)
    assert noisy.failed >= 5  # weaker under heavy noise: README states the power per setting
    assert all(
        any(d.broken for d in r.regressions) for r in noisy.reports if r.regressions
    )  # a regression always names a check that broke


def test_resampling_needs_enough_stored_repeats(stored: list[CheckHistory]) -> None:
    from memeval.errors import ConfigError

    with pytest.raises(ConfigError, match="cannot draw 8 \\+ 3 distinct repeats from 10"):
        resample(stored, 8, 3)


def test_config_alpha_is_used(stored: list[CheckHistory]) -> None:
    strict_alpha = resample(stored, 5, 3, trials=30, seed=3, config=GateConfig(alpha=0.5))
    loose = resample(stored, 5, 3, trials=30, seed=3)
    assert strict_alpha.failed >= loose.failed


def test_junit_says_how_each_failing_check_did_in_the_baseline(tmp_path: Path) -> None:
    base = graded(tmp_path / "base", {"q0": "PPPPP", "q1": "PPPPP", "q2": "PFPFP", "q3": "PPPPP"})
    run = graded(tmp_path / "run", {"q0": "PPP", "q1": "FFF", "q2": "FFF", "q3": "PPP"})
    junit = tmp_path / "junit.xml"
    code, _, _ = gate(run, "--baseline", base, "--junit", junit)
    assert code == 1
    root = ET.parse(junit).getroot()
    failures = {
        c.get("name"): (c.find("failure").get("message") or "")  # type: ignore[union-attr]
        for c in root.iter("testcase")
        if c.find("failure") is not None
    }
    assert failures["q1 question (memory-dependent)"].endswith(
        "(baseline: 5/5 pass, newly failing)"
    )
    assert failures["q2 question (memory-dependent)"].endswith("(flaky in the baseline: 3/5 pass)")
    [suite] = [s for s in root.iter("testsuite") if s.get("name") == "memeval gate"]
    assert (suite.get("tests"), suite.get("failures")) == ("1", "1")
    assert failures["book memory_dependent"].startswith("18/20 → 6/12")
    assert "fingerprint" in (suite.findtext("system-out") or "")
    assert root.get("failures") == str(3 * 2 + 1)  # q1 and q2 in three repeats, and the gate


def test_a_baseline_is_only_written_from_a_complete_run(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", histories({"q0": "PP"}), run_id="partial")
    asyncio.run(grade_and_save(run))
    info = read_run(run)
    info.status = "interrupted"
    save_info(run, info)
    code, _, err = gate(run, "--write-baseline", tmp_path / "b.json")
    assert code == 2 and "the run is interrupted; a baseline needs a complete run" in err
    assert not (tmp_path / "b.json").exists()
