"""Geometry for the file-size-per-turn chart, drawn as inline SVG by the template.

Only numbers and turn anchors leave this module; every label the template prints is escaped
there, so nothing from a model or a scenario reaches the SVG unescaped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

WIDTH, HEIGHT = 960, 240
LEFT, RIGHT, TOP, BOTTOM = 52, 84, 14, 30
LABEL_CHAR_PX = 6.0  # average advance of the 10 px label font (report.css .blabel)
LABEL_ROWS = 2  # neighbouring session labels alternate between two rows


@dataclass
class SizePoint:
    index: int
    chars: int
    anchor: str  # element id of the turn's card
    label: str  # turn id, for the tooltip
    compaction: tuple[int, int, bool] | None = None  # before, after, reached target
    dropped: bool = False  # the write could not get under the cap


@dataclass
class SessionSpan:
    first: int
    last: int
    label: str
    kind: str


@dataclass
class Marker:
    x: float
    y: float
    anchor: str
    title: str


@dataclass
class CompactionMark:
    x: float
    y_before: float
    y_after: float
    anchor: str
    title: str
    reached: bool


@dataclass
class Band:
    x: float
    width: float
    label: str
    kind: str
    shaded: bool
    text: str = ""  # the label as drawn: shortened to the room it has, "" when none fits
    row: int = 0


@dataclass
class HLine:
    y: float
    value: int
    label: str


@dataclass
class Chart:
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right: int = WIDTH - RIGHT
    top: int = TOP
    bottom: int = HEIGHT - BOTTOM
    polyline: str = ""
    points: list[Marker] = field(default_factory=list)
    compactions: list[CompactionMark] = field(default_factory=list)
    dropped: list[Marker] = field(default_factory=list)
    bands: list[Band] = field(default_factory=list)
    limits: list[HLine] = field(default_factory=list)
    yticks: list[HLine] = field(default_factory=list)
    xticks: list[tuple[float, int]] = field(default_factory=list)


def size_chart(
    points: list[SizePoint], sessions: list[SessionSpan], limits: list[tuple[int, str]]
) -> Chart:
    """Lay out one chart: a polyline of sizes, reference lines, compaction drops, sessions."""
    chart = Chart()
    n = max([p.index + 1 for p in points] + [1])
    step = (chart.right - chart.left) / n
    peak = max([p.chars for p in points] + [c[0] for p in points if (c := p.compaction)] + [0])
    top_value = max(limits[-1][0] if limits else 0, peak) * 1.08 or 1000
    y_max = math.ceil(top_value / 1000) * 1000

    def x(i: int) -> float:
        return round(chart.left + (i + 0.5) * step, 1)

    def y(v: float) -> float:
        return round(chart.bottom - (chart.bottom - chart.top) * v / y_max, 1)

    chart.polyline = " ".join(f"{x(p.index)},{y(p.chars)}" for p in points)
    for p in points:
        title = f"#{p.index} {p.label}: {p.chars:,} chars"
        chart.points.append(Marker(x(p.index), y(p.chars), p.anchor, title))
        if p.compaction:
            before, after, reached = p.compaction
            chart.compactions.append(
                CompactionMark(
                    x(p.index),
                    y(before),
                    y(after),
                    p.anchor,
                    f"#{p.index} {p.label}: compaction {before:,} → {after:,} chars"
                    + ("" if reached else " (target not reached)"),
                    reached,
                )
            )
        if p.dropped:
            chart.dropped.append(
                Marker(x(p.index), y(p.chars), p.anchor, f"#{p.index} {p.label}: write dropped")
            )
    for k, s in enumerate(sessions):
        left = chart.left + s.first * step
        chart.bands.append(
            Band(
                round(left, 1), round((s.last - s.first + 1) * step, 1), s.label, s.kind, k % 2 == 1
            )
        )
    _fit_labels(chart.bands, chart.right)
    chart.limits = [HLine(y(v), v, label) for v, label in limits if v <= y_max]
    chart.yticks = [
        HLine(y(v), v, f"{v // 1000}k" if v else "0") for v in range(0, y_max + 1, 2000)
    ]
    every = max(1, math.ceil(n / 25))
    chart.xticks = [(x(i), i) for i in range(0, n, every)]
    return chart


def _fit_labels(bands: list[Band], right: float) -> None:
    """Alternate labels between rows; a label may run until the next label of its own row
    starts (or the plot ends) and is shortened with "…" to fit, or left out when not even
    three characters fit (the band's tooltip still names the session)."""
    for k, band in enumerate(bands):
        band.row = k % LABEL_ROWS
        later = bands[k + LABEL_ROWS] if k + LABEL_ROWS < len(bands) else None
        room = (later.x if later else right) - band.x - 6
        fits = int(room // LABEL_CHAR_PX)
        if len(band.label) <= fits:
            band.text = band.label
        elif fits >= 3:
            band.text = band.label[: fits - 1] + "…"
