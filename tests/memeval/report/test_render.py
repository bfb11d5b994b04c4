"""report.html from hand-made run directories: what a reviewer must be able to see."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from memeval.rundir.record import PhoenixTarget, read_run, write_run
from memeval.rundir.results import VERDICTS_FILE
from tests.memeval.report.conftest import edit_events, graded
from tests.memeval.report.html import Element, by_id, parse, text_of
from tests.memeval.rundirs import build_sample_run, grade_and_save, report_of

TURNS = ["s1t1", "s1t2", "s1t3", "s2t1", "s2t2", "s2t3", "s3q1", "s3q2"]


def _report(run_dir: Path) -> tuple[str, list[Element]]:
    html = report_of(run_dir).read_text(encoding="utf-8")
    return html, parse(html)


def _cards(elements: list[Element]) -> list[Element]:
    return [e for e in elements if e.tag == "article" and "card" in e.classes]


def test_one_card_per_turn_in_order_within_session_blocks(sample_run: Path) -> None:
    html, elements = _report(sample_run)
    cards = _cards(elements)
    assert [c.get("data-turn") for c in cards] == TURNS
    assert [c.get("id") for c in cards] == [f"u0-t{i}" for i in range(8)]
    sessions = [text_of(e) for e in elements if "session-h" in e.classes]
    heads = [s.split(" · ")[0] for s in sessions]
    assert heads == ["seed session s1", "seed session s2", "eval session s3"]
    assert html.index('id="u0-t2"') < html.index("session <b>s2</b>") < html.index('id="u0-t3"')


def test_summary_row_counts_the_runs_verdicts(sample_run: Path) -> None:
    _, elements = _report(sample_run)
    table = next(e for e in elements if e.tag == "table" and "summary" in e.classes)
    row = text_of(table)
    # s2t1 (70-row convention deleted) and s2t2 (style lost in compaction) fail their writes
    assert "6/8" in row and "1/1" in row and "0/1" in row
    (row,) = [text_of(e) for e in elements if e.tag == "tr" and text_of(e).startswith("book")]
    assert row.split()[:2] == ["book-summary", "Book-summary"]
    assert "1 (1)" in row  # one compaction, which reached the target
    assert "1 · 0 · 0" in row  # one dropped write, nothing blocked or rejected


def test_retention_grid_links_each_loss_to_the_turn_that_caused_it(sample_run: Path) -> None:
    _, elements = _report(sample_run)
    lost = [e for e in elements if e.tag == "td" and "c-lost" in e.classes]
    assert len(lost) == 2
    links = [e for e in elements if e.tag == "a" and "lost" in e.get("title").split(": ")[-1]]
    by_fact = {a.get("title").split(" after ")[0]: a for a in links}
    assert by_fact["seventy-rows"].get("href") == "#u0-t3"  # s2t1: the replace op
    assert "edit op #0 (replace)" in by_fact["seventy-rows"].get("title")
    assert by_fact["style"].get("href") == "#u0-t4"  # s2t2: compaction
    assert "removed by compaction" in by_fact["style"].get("title")
    # the targets of those links explain the loss on the card itself
    assert "seventy-rows — removed by edit op #0 (replace)" in text_of(by_id(elements, "u0-t3"))
    assert "style — removed by compaction" in text_of(by_id(elements, "u0-t4"))


def test_card_shows_ops_compaction_diff_and_evidence(sample_run: Path) -> None:
    _, elements = _report(sample_run)
    deleting = text_of(by_id(elements, "u0-t3"))
    assert "delete" in deleting and "Datasets always have exactly 70 rows." in deleting
    assert "write fail" in deleting and "records:seventy-rows" in deleting
    diff_lines = [text_of(e) for e in elements if e.tag == "div" and {"dl", "del"} <= e.classes]
    assert any("[user] Datasets always have exactly 70 rows." in line for line in diff_lines)
    compacting = text_of(by_id(elements, "u0-t4"))
    assert "compaction" in compacting and "→ 158 chars" in compacting
    assert "reached target" in compacting
    dropped = by_id(elements, "u0-t5")
    assert "dropped-over-cap" in text_of(dropped)
    assert dropped.get("data-fail") == "1"


def test_question_verdicts_keep_their_source(sample_run: Path) -> None:
    _, elements = _report(sample_run)
    passed = text_of(by_id(elements, "u0-t6"))
    assert "answer pass judge" in passed  # checks passed, so the judge decided
    assert "cites 0.648 against the 0.90 target" in passed
    failed = by_id(elements, "u0-t7")
    assert "answer fail check" in text_of(failed)  # failed checks stand without a human
    assert "must_not_call:run_experiment" in text_of(failed)
    assert failed.get("data-fail") == "1" and failed.get("data-question") == "1"


def test_a_human_grade_shows_as_the_source(sample_run: Path) -> None:
    grade = {
        "scenario": "book-summary",
        "turn": "s3q2",
        "target": "question",
        "verdict": "pass",
        "note": "run_experiment was harmless here",
        "grader": "dana",
    }
    (sample_run / "grades.json").write_text(json.dumps({"schema_version": 1, "grades": [grade]}))
    asyncio.run(grade_and_save(sample_run, None))
    _, elements = _report(sample_run)
    card = text_of(by_id(elements, "u0-t7"))
    assert "answer pass human" in card
    assert "run_experiment was harmless here" in card
    data = json.loads(text_of(by_id(elements, "report-data")))
    assert data["humanGrades"] == [{**grade, "repeat": 0}]


def test_header_names_models_and_flags_the_fake_one(sample_run: Path) -> None:
    info = read_run(sample_run)
    info.models = {"agent": "openai:gpt-4o-mini", "summarizer": "fake"}
    info.strategies = {"updater": "cascade"}
    write_run(sample_run, info)
    _, elements = _report(sample_run)
    chips = [text_of(e) for e in elements if e.tag == "span" and "chip" in e.classes]
    assert "agent openai:gpt-4o-mini" in chips
    assert "summarizer fake not a model" in chips
    assert "updater cascade" in chips
    assert not any("gpt-4o-mini" in c and "not a model" in c for c in chips)


def test_page_is_self_contained(sample_run: Path) -> None:
    html, elements = _report(sample_run)
    assert not [e for e in elements if e.tag in ("link", "img", "iframe", "object", "embed")]
    scripts = [e for e in elements if e.tag == "script"]
    assert len(scripts) == 2 and not any(s.get("src") for s in scripts)
    assert scripts[0].get("type") == "application/json"
    hrefs = [e.get("href") for e in elements if "href" in e.attrs]
    assert hrefs and all(h.startswith("#") for h in hrefs)
    csp = next(e for e in elements if e.get("http-equiv") == "Content-Security-Policy")
    assert "default-src 'none'" in csp.get("content")
    assert "http://" not in html and "https://" not in html


def test_phoenix_trace_links_come_from_run_config_and_hex_ids(tmp_path: Path) -> None:
    run_dir = build_sample_run(tmp_path / "run")
    trace = "0af7651916cd43dd8448eb211c80319c"
    edit_events(run_dir, "s3q1", trace_id=trace, span_id="b7ad6b7169203331")
    edit_events(run_dir, "s3q2", trace_id=trace, span_id="not-hex")
    _, elements = _report(run_dir)
    assert not [e for e in elements if "trace" in e.classes]  # no phoenix in run.json: no links
    info = read_run(run_dir)
    info.phoenix = PhoenixTarget(url="http://127.0.0.1:6006", project="memeval-test")
    write_run(run_dir, info)
    _, elements = _report(run_dir)
    links = {e.get("href") for e in elements if e.tag == "a" and "trace" in e.classes}
    assert links == {
        "http://127.0.0.1:6006/redirects/spans/b7ad6b7169203331",
        "http://127.0.0.1:6006/redirects/traces/0af7651916cd43dd8448eb211c80319c",
    }


def test_ungraded_run_is_checked_for_display_without_writing_verdicts(tmp_path: Path) -> None:
    run_dir = build_sample_run(tmp_path / "run")
    _, elements = _report(run_dir)
    assert not (run_dir / VERDICTS_FILE).exists()
    assert "checks only" in text_of(next(e for e in elements if e.tag == "header"))
    assert "answer pass check" in text_of(by_id(elements, "u0-t6"))


def test_repeats_get_a_section_each_with_their_own_anchors(tmp_path: Path) -> None:
    from tests.memeval.rundirs import RunDirBuilder, memory

    run = RunDirBuilder(tmp_path / "run")
    sc = run.scenario("tiny", facts={"seventy": {"match": ["70 rows"]}})
    for repeat in (0, 1):
        kept = memory(Conventions=["- [user] 70 rows"]) if repeat == 0 else None
        sc.turn("t1", repeat=repeat, file=kept, expect={"records": ["seventy"]})
    graded(run.write())
    _, elements = _report(run.root)
    units = [e.get("id") for e in elements if e.tag == "section" and "unit" in e.classes]
    assert units == ["u0", "u1"]
    options = [text_of(e) for e in elements if e.tag == "option"]
    assert options == ["all scenario runs", "tiny · repeat 0", "tiny · repeat 1"]
    assert "write pass" in text_of(by_id(elements, "u0-t0"))
    assert "write fail" in text_of(by_id(elements, "u1-t0"))


def test_eval_sessions_diff_memory_against_the_reference_file(tmp_path: Path) -> None:
    from tests.memeval.rundirs import RunDirBuilder, memory

    run = RunDirBuilder(tmp_path / "run")
    reference = memory(Conventions=["- [user] 70 rows"], Goals=["- reach 0.90"])
    sc = run.scenario("tiny", reference_memory={"s2": reference})
    sc.turn("t1", file=memory(Conventions=["- [user] 70 rows"]))
    sc.turn("q1", session="s2", kind="eval", answer="70", tool_calls=[{"name": "lookup"}])
    _, elements = _report(graded(run.write()))
    (box,) = [e for e in elements if e.tag == "details" and "refdiff" in e.classes]
    assert "reference memory +1 −0 lines" in text_of(box)
    added = [text_of(e) for e in elements if e.tag == "div" and {"dl", "add"} <= e.classes]
    assert "4 - reach 0.90" in added  # line 4 of the reference: under ## Goals
    assert "tool calls lookup" in text_of(by_id(elements, "u0-t1"))


def test_a_run_without_turns_renders_a_notice(tmp_path: Path) -> None:
    from tests.memeval.rundirs import RunDirBuilder

    run_dir = RunDirBuilder(tmp_path / "run", status="running").write()
    _, elements = _report(run_dir)
    assert not _cards(elements)
    assert any("no completed turns yet" in text_of(e) for e in elements if e.tag == "p")


def test_a_snapshot_path_outside_the_run_is_never_read(tmp_path: Path) -> None:
    from memeval.report.view import build_view
    from memeval.rundir.saved import SavedRun

    secret = tmp_path / "secret.md"
    secret.write_text("TOP SECRET CONTENT")
    run_dir = build_sample_run(tmp_path / "run")
    edit_events(run_dir, "s1t1", snapshot="../secret.md")
    view = build_view(SavedRun.open(run_dir), None)
    card = view.units[0].sessions[0].cards[0]
    assert all("TOP SECRET" not in line.text for line in card.diff.lines)
    assert any("70 rows" in line.text for line in card.diff.lines)  # the recorded file_after


def test_the_designs_published_figures_sit_beside_a_bundled_scenarios_own(
    sample_run: Path,
) -> None:
    html, elements = _report(sample_run)
    (design,) = [e for e in elements if e.tag == "tr" and "design" in e.classes]
    assert design.get("data-design") == "book-summary"
    cells = {
        e.get("data-metric"): text_of(e)
        for e in elements
        if e.tag == "td" and "design-cell" in e.classes
    }
    # the design's book-summary run: 22/23, 7/7, 3/3; this run: 6/8, 1/1, 0/1
    assert cells["write-match"].split()[:1] == ["22/23"] and "78% of it" in cells["write-match"]
    assert "7/7" in cells["memory-dependent"] and "100% of it" in cells["memory-dependent"]
    assert "3/3" in cells["memory-corruptible"] and "0% of it" in cells["memory-corruptible"]
    assert "not this run's" in text_of(design)
    # every turn of the sample run is write-checked (retention), as in the design's scoring
    assert "write-checks" not in text_of(design)
    # the run's own row keeps its own counts, and the page says where the design's come from
    (row,) = [text_of(e) for e in elements if e.tag == "tr" and text_of(e).startswith("book")]
    assert "6/8" in row and "22/23" not in row
    assert "graded by people" in html and "≈67 s" in html


def test_no_design_row_for_a_scenario_the_design_did_not_run(sample_run: Path) -> None:
    path = sample_run / VERDICTS_FILE
    verdicts = json.loads(path.read_text(encoding="utf-8"))
    for m in verdicts["metrics"]:
        m["scenario"] = "my-own-scenario"
    path.write_text(json.dumps(verdicts), encoding="utf-8")
    html, elements = _report(sample_run)
    assert not [e for e in elements if e.tag == "tr" and "design" in e.classes]
    assert "The design's run" not in html


def test_the_files_limits_are_drawn_only_for_a_file_memory(tmp_path: Path) -> None:
    from tests.memeval.rundirs import RunDirBuilder

    def chart_labels(memory: str) -> str:
        run = RunDirBuilder(tmp_path / memory, memory=memory)
        run.scenario("s").turn("t1", file="- Datasets have 70 rows.\n")
        html, _ = _report(run.write())
        return html

    assert "cap 8,000" in chart_labels("file") and "trigger 7,000" in chart_labels("file")
    for system in ("retrieval", "core-search"):  # a fact list, or a core plus its archive
        assert "cap 8,000" not in chart_labels(system)
        assert "trigger 7,000" not in chart_labels(system)


def test_a_failed_agent_call_the_agent_answered_without_is_shown_on_its_card(
    tmp_path: Path,
) -> None:
    from tests.memeval.rundirs import RunDirBuilder

    failed = {"role": "agent", "model": "local:m", "error": "ReplyError: reply is repeating"}
    answered = {"role": "agent", "model": "local:m", "prompt_tokens": 900}
    run = RunDirBuilder(tmp_path / "run")
    sc = run.scenario("tiny")
    sc.turn("t1")
    sc.turn("q1", session="s2", kind="eval", answer="Could not run it.", calls=[failed, answered])
    sc.turn("q2", session="s2", kind="eval", answer="", calls=[failed], agent_error="gave up")
    _, elements = _report(graded(run.write()))
    shown = text_of(by_id(elements, "u0-t1"))
    assert "agent call failed, answered without it: ReplyError: reply is repeating" in shown
    assert "Could not run it." in shown
    errored = text_of(by_id(elements, "u0-t2"))  # the turn's error says it, once
    assert "agent error: gave up" in errored and "answered without it" not in errored
