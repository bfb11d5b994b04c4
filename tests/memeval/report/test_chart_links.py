"""Size-chart geometry and Phoenix links built only from safe, validated parts."""

from __future__ import annotations

import itertools

import pytest
from pydantic import ValidationError

from memeval.report.chart import LABEL_CHAR_PX, SessionSpan, SizePoint, size_chart
from memeval.report.links import phoenix_base, phoenix_link
from memeval.rundir.record import PhoenixTarget

LINES = [(6000, "target"), (7000, "trigger"), (8000, "cap")]


def test_chart_places_sizes_limits_compactions_and_sessions() -> None:
    points = [
        SizePoint(0, 1000, "u0-t0", "s1t1"),
        SizePoint(1, 7500, "u0-t1", "s1t2", compaction=(7500, 5900, True)),
        SizePoint(2, 5900, "u0-t2", "s2t1", dropped=True),
    ]
    sessions = [SessionSpan(0, 1, "s1", "seed"), SessionSpan(2, 2, "s2", "eval")]
    chart = size_chart(points, sessions, LINES)
    ys = [p.y for p in chart.points]
    assert ys[1] < ys[2] < ys[0]  # bigger file, higher point (SVG y grows downwards)
    assert [line.label for line in chart.limits] == ["target", "trigger", "cap"]
    cap, target = chart.limits[2], chart.limits[0]
    assert cap.y < target.y
    (mark,) = chart.compactions
    assert mark.y_before < mark.y_after and mark.reached and mark.anchor == "u0-t1"
    assert "7,500 → 5,900" in mark.title
    assert [d.anchor for d in chart.dropped] == ["u0-t2"]
    assert [b.label for b in chart.bands] == ["s1", "s2"]
    assert chart.bands[1].x > chart.bands[0].x
    assert all(chart.top <= y <= chart.bottom for y in ys)


def test_session_labels_of_narrow_sessions_never_overlap() -> None:
    """57 turns in 1-3-turn sessions with long names (the combined scenario's shape)."""
    names = ["intro", "book-summary/s1", "legal-rag/s1", "agent-traces/s1", "book-summary/s2"]
    sessions, first = [], 0
    for k in range(24):
        width = 1 + k % 3
        sessions.append(SessionSpan(first, first + width - 1, names[k % 5], "seed"))
        first += width
    points = [SizePoint(i, 100 * i, f"t{i}", f"t{i}") for i in range(first)]
    chart = size_chart(points, sessions, LINES)
    assert {b.row for b in chart.bands} == {0, 1}
    for row in (0, 1):
        drawn = [b for b in chart.bands if b.row == row]
        for band, after in itertools.pairwise(drawn):
            end = band.x + 4 + len(band.text) * LABEL_CHAR_PX
            assert end <= after.x, (band.text, after.label)
    assert all(b.text == b.label or b.text.endswith("…") or not b.text for b in chart.bands)
    assert all(b.text for b in chart.bands)  # two turns of room still show a few characters
    assert any(b.text == "intro" for b in chart.bands)
    wide = size_chart(points[:2], [SessionSpan(0, 1, "book-summary/s1", "seed")], LINES)
    assert wide.bands[0].text == "book-summary/s1"


def test_chart_grows_above_the_cap_when_a_file_exceeds_it() -> None:
    chart = size_chart([SizePoint(0, 9500, "a", "t")], [], LINES)
    assert chart.points[0].y >= chart.top
    assert chart.yticks[-1].value >= 9500


def test_phoenix_link_prefers_the_turn_span() -> None:
    base = phoenix_base(PhoenixTarget(url="http://127.0.0.1:6006/", project="memeval"))
    assert base == "http://127.0.0.1:6006"
    assert phoenix_link(base, "ab" * 16, "cd" * 8) == f"{base}/redirects/spans/{'cd' * 8}"
    assert phoenix_link(base, "ab" * 16, None) == f"{base}/redirects/traces/{'ab' * 16}"


def test_phoenix_collector_endpoint_maps_to_the_ui_root() -> None:
    target = PhoenixTarget(url="https://phoenix.example/v1/traces")
    assert phoenix_base(target) == "https://phoenix.example"


@pytest.mark.parametrize(
    "phoenix",
    [
        None,
        {},
        {"url": "javascript:alert(1)//"},
        {"url": "data:text/html,<script>alert(1)</script>"},
        {"url": "//evil.example"},
    ],
)
def test_unsafe_or_missing_phoenix_config_gives_no_link(phoenix: dict | None) -> None:
    base = phoenix_base(PhoenixTarget.model_validate(phoenix) if phoenix is not None else None)
    assert base is None
    assert phoenix_link(base, "ab" * 16, "cd" * 8) is None


def test_a_phoenix_url_that_is_not_text_is_refused_when_read() -> None:
    with pytest.raises(ValidationError):
        PhoenixTarget.model_validate({"url": 42})


@pytest.mark.parametrize("trace_id", ["javascript:alert(1)", "../../etc", "AB" * 15, ""])
def test_ids_that_are_not_hex_give_no_link(trace_id: str) -> None:
    assert phoenix_link("http://127.0.0.1:6006", trace_id, "x" * 16) is None
