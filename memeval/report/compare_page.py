"""Render `compare.html`: the flips and metric deltas of two runs as one self-contained page.

Each flipped turn links to its card in either run's report.html when that report exists; the
link is a relative path between our own output files plus a numeric anchor, never run text.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

from memeval.compare import Comparison, group_by_scenario
from memeval.report.render import REPORT_FILE, render_template, write_atomic
from memeval.report.view import card_anchors
from memeval.rundir.saved import SavedRun

COMPARE_FILE = "compare.html"


def render_compare(cmp: Comparison, out: Path | None = None) -> Path:
    """Write the compare page (default: compare.html in run B) and return its path."""
    out = Path(out) if out is not None else cmp.dir_b / COMPARE_FILE
    links = {"a": _links(cmp.a, out), "b": _links(cmp.b, out)}
    html = render_template(
        "compare.html.j2", cmp=cmp, groups=group_by_scenario(cmp.flips), links=links, script=False
    )
    return write_atomic(out, html)


def _links(run: SavedRun, out: Path) -> dict[tuple[str, str], str]:
    """(scenario, turn) -> href of the turn's card (its first repeat) in the run's report."""
    report = run.path / REPORT_FILE
    if not report.is_file():
        return {}
    rel = quote(Path(os.path.relpath(report.resolve(), out.resolve().parent)).as_posix())
    links: dict[tuple[str, str], str] = {}
    anchors = card_anchors(run)
    for (scenario, _repeat, turn), anchor in sorted(anchors.items(), key=lambda kv: kv[0][1]):
        links.setdefault((scenario, turn), f"{rel}#{anchor}")
    return links
