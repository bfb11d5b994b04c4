"""verdicts.json: written by grading, read back by every later view, with one-line errors."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from memeval.errors import RunDirError
from memeval.rundir.results import Ratio, load_results
from tests.memeval.rundirs import build_sample_run, grade_and_save


def test_grading_round_trips_through_verdicts_json(tmp_path: Path) -> None:
    run_dir = build_sample_run(tmp_path / "run")
    graded = asyncio.run(grade_and_save(run_dir))
    loaded = load_results(run_dir)
    assert loaded == graded
    assert loaded.run_id == "sample-run"
    assert [t.turn for t in loaded.turns][:3] == ["s1t1", "s1t2", "s1t3"]
    metrics = loaded.metrics_for("book-summary")
    assert metrics is not None
    # every turn holding tracked facts is write-checked: 8 turns, two lost a fact
    assert (str(metrics.write_match), str(metrics.memory_dependent)) == ("6/8", "1/1")
    assert str(metrics.memory_corruptible) == "0/1"
    assert (metrics.compactions, metrics.compactions_reached_target) == (1, 1)
    assert metrics.dropped_writes == 1


def test_a_run_that_was_never_graded_says_how_to_grade_it(tmp_path: Path) -> None:
    run_dir = build_sample_run(tmp_path / "run")
    with pytest.raises(RunDirError, match=r"not graded\); run `memeval grade "):
        load_results(run_dir)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{oops", "not valid JSON"),
        (json.dumps({"schema_version": 99, "run_id": "x"}), "schema_version 99 is not supported"),
        (json.dumps({"schema_version": 1}), "invalid at run_id"),
    ],
)
def test_a_broken_verdicts_json_is_a_one_line_error(
    tmp_path: Path, content: str, message: str
) -> None:
    (tmp_path / "verdicts.json").write_text(content, encoding="utf-8")
    with pytest.raises(RunDirError, match=message) as err:
        load_results(tmp_path)
    assert "\n" not in str(err.value)


def test_ratio_rate_and_text() -> None:
    assert Ratio(passed=3, total=4).rate == 0.75 and str(Ratio(passed=3, total=4)) == "3/4"
    assert Ratio().rate is None
