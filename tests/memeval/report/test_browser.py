"""The report in real headless Chromium: renders cleanly, grades, exports, and `memeval grade`
imports the exported file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memeval.cli import app
from memeval.rundir.results import load_results
from tests.memeval.report.conftest import chromium
from tests.memeval.report.html import by_id, parse, text_of
from tests.memeval.rundirs import report_of

pytestmark = pytest.mark.browser


def _open(browser: Any, report: Path) -> tuple[Any, list[str]]:
    page = browser.new_page(accept_downloads=True)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(report.as_uri())
    return page, errors


def test_grade_in_the_browser_export_and_import(sample_run: Path, tmp_path: Path) -> None:
    report = report_of(sample_run)
    exported = tmp_path / "grades.json"
    with chromium() as browser:
        page, errors = _open(browser, report)
        assert page.locator("article.card").count() == 8
        assert page.locator("svg.chart circle.pt").count() == 8
        card = page.locator("#u0-t7")  # the memory-corruptible question its checks failed
        box = card.locator('.grade[data-target="question"]')
        box.locator("button.g-pass").click()
        box.locator(".g-note").fill("calling run_experiment was fine here")
        page.locator("#grader").fill("dana")
        assert box.locator("button.g-pass").get_attribute("aria-pressed") == "true"
        assert box.locator("button.g-fail").get_attribute("aria-pressed") == "false"
        assert page.locator("#grade-count").text_content() == "1 grade"

        page.reload()  # grades persist in the browser, keyed by run id
        box = page.locator('#u0-t7 .grade[data-target="question"]')
        assert box.locator("button.g-pass").get_attribute("aria-pressed") == "true"
        assert box.locator(".g-note").input_value() == "calling run_experiment was fine here"
        assert page.locator("#grader").input_value() == "dana"

        with page.expect_download() as info:
            page.locator("#export").click()
        download = info.value
        assert download.suggested_filename == "grades.json"
        download.save_as(exported)
        assert errors == []

    assert json.loads(exported.read_text()) == {
        "schema_version": 1,
        "grades": [
            {
                "scenario": "book-summary",
                "repeat": 0,
                "turn": "s3q2",
                "target": "question",
                "verdict": "pass",
                "note": "calling run_experiment was fine here",
                "grader": "dana",
            }
        ],
    }
    result = CliRunner().invoke(app, ["grade", str(sample_run), str(exported)])
    assert result.exit_code == 0, result.output
    turn = load_results(sample_run).turn("book-summary", 0, "s3q2")
    assert turn is not None and turn.question is not None
    assert (turn.question.verdict, turn.question.source) == ("pass", "human")
    card = by_id(parse(report.read_text()), "u0-t7")  # `memeval grade` regenerated the report
    assert "answer pass human" in text_of(card)


def test_clicking_the_pressed_verdict_clears_it(sample_run: Path) -> None:
    with chromium() as browser:
        page, errors = _open(browser, report_of(sample_run))
        fail = page.locator('#u0-t0 .grade[data-target="write"] button.g-fail')
        fail.click()
        assert fail.get_attribute("aria-pressed") == "true"
        fail.click()
        assert fail.get_attribute("aria-pressed") == "false"
        assert page.locator("#grade-count").text_content() == "0 grades"
        assert errors == []


def test_filters_and_keyboard(sample_run: Path) -> None:
    with chromium() as browser:
        page, errors = _open(browser, report_of(sample_run))
        visible = "article.card:not([hidden])"
        page.locator("#f-fail").check()
        shown = page.eval_on_selector_all(visible, "cs => cs.map(c => c.dataset.turn)")
        assert shown == ["s2t1", "s2t2", "s2t3", "s3q2"]  # two lost facts, a dropped write
        page.locator("#f-question").check()
        assert page.eval_on_selector_all(visible, "cs => cs.map(c => c.dataset.turn)") == ["s3q2"]
        page.locator("#f-fail").uncheck()
        page.locator("#f-question").uncheck()
        assert page.locator(visible).count() == 8

        page.keyboard.press("Escape")  # leave the checkbox: keys typed into inputs are ignored
        page.keyboard.press("j")
        page.keyboard.press("j")
        assert page.evaluate("document.activeElement.id") == "u0-t1"
        page.keyboard.press("f")  # grades the focused card's first target
        fail = page.locator('#u0-t1 .grade[data-target="write"] button.g-fail')
        assert fail.get_attribute("aria-pressed") == "true"
        page.keyboard.press("x")  # toggles "only failures"
        assert page.locator("#f-fail").is_checked()
        assert errors == []


def test_retention_cells_get_titles_on_hover(sample_run: Path) -> None:
    with chromium() as browser:
        page, errors = _open(browser, report_of(sample_run))
        first_row = page.locator("table.grid tbody tr").first
        cell = first_row.locator("td").nth(1)
        cell.hover()
        assert cell.get_attribute("title") == "seventy-rows after s1t2: present"
        lost = first_row.locator("td.c-lost a")
        assert lost.get_attribute("href") == "#u0-t3"
        lost.click()
        assert page.evaluate("location.hash") == "#u0-t3"
        assert errors == []
