"""`memeval import locomo` on a small file the project wrote in LoCoMo's layout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memeval.errors import ConfigError
from memeval.grading.calibrate import check_control, scenario_controls
from memeval.importers.common import write_scenario
from memeval.importers.locomo import DONT_KNOW, NOT_SAID, import_locomo
from memeval.scenario.loader import resolve

DATA = Path(__file__).resolve().parents[2] / "data" / "importers" / "locomo-small.json"


def turns_of(doc: dict[str, Any], session: str) -> list[dict[str, Any]]:
    return next(s for s in doc["sessions"] if s["id"] == session)["turns"]


def test_a_sample_becomes_seed_sessions_and_one_eval_session(tmp_path: Path) -> None:
    doc, source = import_locomo(DATA, sample="mini-1")
    assert doc["name"] == "locomo-mini-1"
    assert (doc["user"], doc["space"]) == ("ines", "locomo")
    assert [s["id"] for s in doc["sessions"]] == ["s1", "s2", "s3", "qa"]
    assert [s["kind"] for s in doc["sessions"]] == ["seed", "seed", "seed", "eval"]
    s1 = turns_of(doc, "s1")
    # A's messages open a turn, B's replies that follow are its transcript; the date opens it
    assert s1[0]["user"].startswith("[9:10 am on 3 March, 2024] Morning!")
    assert s1[0]["transcript"] == [{"assistant": "That's great! When does it start?"}]
    # two A messages in a row are one user turn; a shared photo keeps its caption
    assert s1[1]["user"] == (
        "Next Tuesday. It runs for eight weeks.\nLook at the first bowl I made in the trial"
        " class. [shares a photo of a lopsided blue bowl]"
    )
    # B opening a session gets a turn whose user message is the date
    s2 = turns_of(doc, "s2")
    assert s2[0]["user"] == "[6:45 pm on 17 March, 2024]"
    assert s2[0]["transcript"] == [{"assistant": "Hey Ines, how was the second pottery class?"}]
    assert all("note" in t["expect"] and len(t["expect"]) == 1 for t in s1 + s2)
    questions = turns_of(doc, "qa")
    assert [t["id"] for t in questions] == [
        "q001-c4",
        "q002-c2",
        "q003-c1",
        "q004-c1",
        "q005-c3",
        "q006-c5",
        "q007-c5",
    ]
    kinds = {t["id"]: t["question"]["type"] for t in questions}
    assert kinds["q003-c1"] == "memory-dependent"
    assert kinds["q006-c5"] == "memory-corruptible"
    assert "Aurelio" in questions[2]["question"]["criterion"]
    # the category is a tag; categories 1-4 carry LoCoMo's F1 against the gold answer,
    # reported only (no min, so no check) unless --f1-min is given
    assert questions[2]["question"]["tags"] == ["locomo-c1"]
    assert questions[2]["question"]["answer_f1"] == {"gold": "Aurelio"}
    # every question has controls for the judge: the gold answer passes; not knowing and a
    # confident wrong answer (the next same-category question's gold, sharing no token) fail;
    # an adversarial one passes saying it was never said and fails on the dataset's trap
    assert questions[2]["question"]["controls"] == {
        "pass": ["Aurelio"],
        "fail": [DONT_KNOW, "A greyhound"],
    }
    assert questions[3]["question"]["controls"]["fail"][1] == "Aurelio"
    # no other category-4 question: the next one of any category
    assert questions[0]["question"]["controls"]["fail"][1] == "5 March 2024"
    assert questions[5]["question"]["controls"] == {"pass": [NOT_SAID], "fail": ["A greyhound"]}
    assert questions[6]["question"]["controls"]["fail"] == ["blue"]
    assert questions[5]["question"]["tags"] == ["locomo-c5"]
    assert "answer_f1" not in questions[5]["question"]
    assert "not contain this information" in questions[5]["question"]["criterion"]
    assert "'A greyhound'" in questions[5]["question"]["criterion"]
    assert "sessions 1-3 of 3, 7 of 7 questions" in source.selection
    assert source.sha256 and source.file == "locomo-small.json"
    assert "CC BY-NC 4.0" in doc["description"] and source.sha256[:16] in doc["description"]

    out = tmp_path / "mini.yaml"
    write_scenario(doc, source, out, "memeval import locomo ...")
    resolved = resolve(out)
    assert resolved.description == doc["description"]
    header = out.read_text().splitlines()[:4]
    assert header[1] == f"# file: locomo-small.json (sha256 {source.sha256})"


def test_sessions_cut_keeps_only_questions_whose_evidence_lies_in_the_kept_sessions() -> None:
    doc, source = import_locomo(DATA, sample="mini-1", sessions=2)
    assert [s["id"] for s in doc["sessions"]] == ["s1", "s2", "qa"]
    # q004 and q006 cite session 3; q005 cites nothing readable; q007 cites session 1
    assert [t["id"] for t in turns_of(doc, "qa")] == ["q001-c4", "q002-c2", "q003-c1", "q007-c5"]
    assert "sessions 1-2 of 3, 4 of 7 questions (3 rest on later or unreadable evidence)" in (
        source.selection
    )


def test_f1_min_makes_a_check_whose_controls_the_checks_decide(tmp_path: Path) -> None:
    doc, source = import_locomo(DATA, sample="mini-1", f1_min=0.5)
    question = turns_of(doc, "qa")[0]["question"]
    assert question["answer_f1"] == {"gold": "A pottery course", "min": 0.5}
    assert question["controls"]["pass"] == ["A pottery course"]
    out = tmp_path / "f1.yaml"
    write_scenario(doc, source, out, "memeval import locomo ...")
    controls = scenario_controls(resolve(out))
    # five answerable questions (the gold, not knowing, a wrong gold), two adversarial ones
    assert len(controls) == 19
    for control in controls:
        verdict = check_control(control).verdict
        if control.turn.id.endswith("-c5"):
            assert verdict == "na", control.label  # only the judge grades these
        else:
            assert verdict == control.known, control.label
    with pytest.raises(ConfigError, match=r"--f1-min 1.5: not an F1 score"):
        import_locomo(DATA, sample="mini-1", f1_min=1.5)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "holds 2 samples: choose one with --sample (valid: mini-1, mini-2)"),
        (
            {"sample": "conv-99"},
            "--sample conv-99: not in locomo-small.json (valid: mini-1, mini-2)",
        ),
        (
            {"sample": "mini-1", "sessions": 4},
            "--sessions 4: sample mini-1 has 3 sessions (valid: 1-3)",
        ),
        ({"sample": "mini-1", "sessions": 0}, "(valid: 1-3)"),
    ],
)
def test_bad_choices_are_one_line_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        import_locomo(DATA, **kwargs)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def broken(tmp_path: Path, mutate: Any) -> Path:
    data = json.loads(DATA.read_text())
    mutate(data[0])
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(data[:1]))
    return path


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda s: s.pop("conversation"), "expected a `conversation` object, got missing"),
        (lambda s: s["conversation"].pop("speaker_b"), "expected speaker_b, got missing"),
        (
            lambda s: s["conversation"]["session_2"][1].update(speaker="Zed"),
            "session_2[1]: speaker 'Zed' is neither speaker_a nor speaker_b (valid: Ines, Tomas)",
        ),
        (lambda s: s["qa"][0].update(category=9), "qa[0]: category 9 is not a LoCoMo category"),
        (lambda s: s["qa"][1].pop("answer"), "qa[1]: expected the gold `answer`, got missing"),
        (
            lambda s: [s["conversation"].pop(k) for k in list(s["conversation"]) if "session" in k],
            "no sessions (expected conversation.session_1, ...)",
        ),
    ],
)
def test_missing_or_wrong_fields_name_what_is_wrong(
    tmp_path: Path, mutate: Any, message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        import_locomo(broken(tmp_path, mutate))
    assert message in str(info.value)


def test_a_file_that_is_not_json_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('[{"sample_id": "a",\n  oops]\n')
    with pytest.raises(ConfigError, match=r"x\.json:2: not valid JSON .*expected a JSON file"):
        import_locomo(path)
