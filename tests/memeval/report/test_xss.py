"""Markup planted in every scenario and model string must render as inert text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memeval.rundir.record import PhoenixTarget, read_run, write_run
from tests.memeval.report.conftest import chromium, graded
from tests.memeval.report.html import Element, parse, text_of
from tests.memeval.rundirs import RunDirBuilder, build_sample_run, memory, report_of

X = (
    '<script>window.__pwned=1;alert(1)</script><img src=x onerror="window.__pwned=2;alert(2)">'
    '<a href="javascript:window.__pwned=3">j</a><svg onload="window.__pwned=4"></svg>'
    "</script><script>window.__pwned=5</script>' \" ` ${x} {{7*7}} javascript:alert(6)"
)


def hostile_run(root: Path) -> Path:
    """A run whose every string from a scenario or a model carries X."""
    run = RunDirBuilder(root, run_id=f"run{X}")
    sc = run.scenario(
        "evil",
        title=X,
        facts={"f": {"match": [X[:20]], "description": X}},
        session_titles={"s1": X, "s2": X},
    )
    sc.turn(
        "t1",
        user=X,
        file=memory(Conventions=[f"- [user] {X}"]),
        ops=[{"op": "add", "anchor": "## Conventions\n", "text": f"- [user] {X}\n", "why": X}],
        summary=X,
        blocked=[X],
        expect={"note": X, "records": ["f"], "forbids": [X]},
        tool_calls=[{"name": "query", "arguments": {"q": X}, "result": {"rows": X}}],
        calls=[{"role": "updater", "model": X, "error": X}],
        extra_update={
            "safety": [{"text": X, "verdict": "block", "reason": X, "op_index": 0}],
            "attempts": [{"number": 1, "raw": X, "ops": None, "error": X}],
            "errors": [X],
            "strategy": X,
        },
    )
    sc.turn(
        "t2",
        file=memory(Conventions=["- compacted"]),
        compaction={"user_lines_lost": [X], "errors": [X], "text_before": X},
        expect={"records": ["f"]},
    )
    sc.turn(
        "q1",
        session="s2",
        kind="eval",
        user=X,
        answer=f"70 rows {X}",
        memory_context=X,
        agent_error=None,
        question={"type": "memory-dependent", "criterion": X, "answer_matches": [["70"]]},
    )
    sc.turn("q2", session="s2", kind="eval", user=X, answer="", agent_error=X)
    run_dir = run.write()
    info = read_run(run_dir)
    info.models = {"agent": X, "judge": "scripted"}
    info.strategies = {X: X}
    info.phoenix = PhoenixTarget(url=f"javascript:alert(1)//{X}")
    info.error = X
    write_run(run_dir, info)
    grade = {"scenario": "evil", "turn": "q1", "target": "question", "verdict": "fail", "note": X}
    (run_dir / "grades.json").write_text(json.dumps({"schema_version": 1, "grades": [grade]}))
    return graded(run_dir, judge_reason=X)


@pytest.fixture
def hostile_report(tmp_path: Path) -> Path:
    return report_of(hostile_run(tmp_path / "run"))


def _assert_inert(elements: list[Element], html: str) -> None:
    tags = {e.tag for e in elements}
    assert not tags & {"img", "iframe", "object", "embed", "link"}
    assert [e.get("class") for e in elements if e.tag == "svg"] == ["chart"]
    scripts = [e for e in elements if e.tag == "script"]
    assert len(scripts) == 2 and scripts[0].get("type") == "application/json"
    assert "__pwned" not in text_of(scripts[1])
    for e in elements:
        for name, value in e.attrs.items():
            assert not name.startswith("on"), f"event handler attribute on <{e.tag}>"
            assert not value.strip().lower().startswith("javascript:"), f"{name} on <{e.tag}>"
    assert "<img src=x" not in html and "<svg onload" not in html
    assert "&lt;img src=x onerror=" in html


def test_hostile_text_is_escaped_everywhere(hostile_report: Path) -> None:
    html = hostile_report.read_text(encoding="utf-8")
    elements = parse(html)
    _assert_inert(elements, html)
    texts = " ".join(text_of(e) for e in elements if e.tag == "article")
    assert texts.count("window.__pwned=2") >= 10  # shown, as text, in many places
    assert "{{7*7}}" in texts  # never evaluated as a template


def test_embedded_json_escapes_markup_and_round_trips(hostile_report: Path) -> None:
    html = hostile_report.read_text(encoding="utf-8")
    start = html.index('<script type="application/json" id="report-data">')
    body = html[start:].split(">", 1)[1].split("</script>", 1)[0]
    assert "<" not in body and ">" not in body and "&" not in body
    data: dict[str, Any] = json.loads(body)
    assert data["runId"] == f"run{X}"
    assert data["humanGrades"][0]["note"] == X


def test_the_sample_runs_hostile_mode_is_inert_too(tmp_path: Path) -> None:
    html = report_of(graded(build_sample_run(tmp_path / "run", hostile=True))).read_text()
    elements = parse(html)
    assert not [e for e in elements if e.tag == "a" and "javascript" in e.get("href")]
    assert '<script>alert("x")</script>' not in html
    assert "&lt;script&gt;alert(" in html


@pytest.mark.browser
def test_hostile_report_runs_no_script_in_chromium(hostile_report: Path) -> None:
    with chromium() as browser:
        _open_and_check(browser.new_page(), hostile_report)


def _open_and_check(page: Any, hostile_report: Path) -> None:
    dialogs: list[str] = []
    errors: list[str] = []

    def on_dialog(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(hostile_report.as_uri())
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    page.locator("article.card").first.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    assert page.evaluate("window.__pwned") is None
    assert dialogs == []
    assert errors == []
    assert page.locator("img, iframe, a[href^='javascript']").count() == 0
    assert page.locator("#u0-t2 details.mem pre").text_content() == X  # filled from the JSON
    user_text = page.locator("#u0-t0 .msg.user .txt").text_content() or ""
    assert user_text.startswith("<script>window.__pwned=1;alert(1)</script><img src=x")


def test_compare_page_escapes_run_text(tmp_path: Path) -> None:
    from memeval.compare import compare_runs
    from memeval.report.compare_page import render_compare
    from memeval.rundir.saved import SavedRun

    a = hostile_run(tmp_path / "a")
    b = tmp_path / "b"
    hostile_run(b)
    (b / "verdicts.json").unlink()
    (b / "grades.json").unlink()  # without the human "fail", the judge passes q1: a flip
    page = render_compare(compare_runs(SavedRun.open(a), SavedRun.open(graded(b)))).read_text(
        encoding="utf-8"
    )
    elements = parse(page)
    assert "q1" in " ".join(text_of(e) for e in elements if e.tag == "tr")
    assert not [e for e in elements if e.tag in ("script", "img", "svg", "iframe")]
    assert "<img src=x" not in page and "&lt;img src=x onerror=" in page
    csp = next(e for e in elements if e.get("http-equiv") == "Content-Security-Policy")
    assert "script-src 'none'" in csp.get("content")
