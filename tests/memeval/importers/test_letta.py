"""`memeval import letta` on a small file the project wrote in Letta's update-set layout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memeval.errors import ConfigError
from memeval.grading.calibrate import check_control, scenario_controls
from memeval.importers.common import write_scenario
from memeval.importers.letta import Row, import_letta, superseded_answer
from memeval.scenario.loader import resolve

DATA = Path(__file__).resolve().parents[2] / "data" / "importers" / "letta-small.jsonl"


def question(doc: dict[str, Any], row: int) -> dict[str, Any]:
    session = next(s for s in doc["sessions"] if s["id"] == f"r{row}-ask")
    return session["turns"][0]["question"]


def test_rows_become_facts_correction_and_question_in_order() -> None:
    doc, source = import_letta(DATA)
    assert [s["id"] for s in doc["sessions"]] == [
        "r1-facts", "r1-update", "r1-ask", "r2-update", "r2-ask", "r3-update", "r3-ask",
        "r4-facts", "r4-update", "r4-ask", "r5-update", "r5-ask",
    ]  # fmt: skip
    correction = doc["sessions"][3]["turns"][0]
    # the wrapping quotes some rows carry are not part of the sentence
    assert correction["user"] == (
        "An update to what I told you: Mira Holt is a glassblower who works in Porto."
    )
    assert source.selection == "rows 1-5 of 5"
    assert "Apache-2.0" in doc["description"]


def test_short_new_answers_are_checked_and_recorded_and_long_ones_go_to_the_judge() -> None:
    doc, _ = import_letta(DATA)
    assert question(doc, 2)["answer_matches"] == [["Porto"]]
    assert "answer_matches" not in question(doc, 3)  # a sentence: the judge grades it
    assert (
        "Gives the corrected answer: They met through a mutual friend"
        in (question(doc, 3)["criterion"])
    )
    # the correction turn must record a short answer no first-stated fact contains
    assert doc["facts"]["r2-answer"]["match"] == ["Porto"]
    assert doc["sessions"][3]["turns"][0]["expect"]["records"] == ["r2-answer"]
    # row 5 corrects the same fact again: row 4's answer may go once row 5 is stated
    assert doc["facts"]["r4-answer"]["until"] == "r5-correction"
    assert "until" not in doc["facts"]["r5-answer"]


def test_the_superseded_answer_is_excluded_only_where_the_sentences_line_up() -> None:
    doc, _ = import_letta(DATA)
    assert question(doc, 1)["answer_excludes"] == ["Tamil and French"]
    assert question(doc, 2)["answer_excludes"] == ["Lisbon"]
    assert question(doc, 4)["answer_excludes"] == ["Petrel"]
    # row 5 follows row 4's correction of the same fact: the first sentence is no longer
    # what memory held, so nothing is excluded
    assert "answer_excludes" not in question(doc, 5)
    assert "answer_excludes" not in question(doc, 3)


SUPERSEDED = [
    # (first-stated fact, correction, new answer, the superseded answer read off them)
    (
        "Nora Fishel and Eli Wood ran a charity event.",
        "Joren Sul and Eli Wood ran a charity event.",
        "Joren Sul",
        "Nora Fishel",
    ),
    (
        "He is known for expertise in environmental science.",
        "He is known for expertise in classical music composition.",
        "classical music composition",
        "environmental science",
    ),
    # the answer's word is not the correction's word: nothing lines up
    (
        "Rylan is an accomplished landscape photographer.",
        "Rylan is an accomplished sculptor.",
        "sculpture",
        None,
    ),
    # the correction only adds words: nothing was replaced
    ("Jo hikes with Rylan.", "Jo hikes with his sister, not Rylan.", "His sister", None),
]


@pytest.mark.parametrize(("fact", "correction", "answer", "old"), SUPERSEDED)
def test_superseded_answer_reading(
    fact: str, correction: str, answer: str, old: str | None
) -> None:
    row = Row(1, "Q?", answer, (fact,), correction, (0,))
    assert superseded_answer(row) == old


def test_controls_get_their_known_verdict_from_the_checks(tmp_path: Path) -> None:
    doc, source = import_letta(DATA)
    out = tmp_path / "letta.yaml"
    write_scenario(doc, source, out, "memeval import letta ...")
    controls = scenario_controls(resolve(out))
    assert len(controls) == 11  # rows 1, 2, 4: pass + don't-know + stale; row 5: pass + don't-know
    for control in controls:
        assert check_control(control).verdict == control.known, control.label


def test_rows_option_and_bad_rows(tmp_path: Path) -> None:
    doc, source = import_letta(DATA, rows=2)
    assert [s["id"] for s in doc["sessions"]] == [
        "r1-facts",
        "r1-update",
        "r1-ask",
        "r2-update",
        "r2-ask",
    ]
    assert source.selection == "rows 1-2 of 5"
    with pytest.raises(ConfigError, match=r"--rows 9: letta-small.jsonl has 5 rows \(valid: 1-5\)"):
        import_letta(DATA, rows=9)
    lines = DATA.read_text().splitlines()
    row = json.loads(lines[0])
    del row["agent_args"]["extra"]["facts"]
    path = tmp_path / "bad.jsonl"
    path.write_text(lines[1] + "\n" + json.dumps(row) + "\n")
    with pytest.raises(
        ConfigError,
        match=r"bad.jsonl: row 2: agent_args.extra: expected a `facts` list, got missing",
    ):
        import_letta(path)
    path.write_text(lines[1] + "\n{not json\n")
    with pytest.raises(
        ConfigError, match=r"bad.jsonl:2: not valid JSON .*one JSON object per line"
    ):
        import_letta(path)
    row = json.loads(lines[0])
    row["agent_args"]["extra"]["supporting_fact_indices"] = [7]
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(
        ConfigError, match=r"supporting_fact_indices \[7\] are not fact numbers \(valid: 0-4\)"
    ):
        import_letta(path)
