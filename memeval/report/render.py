"""Render `report.html`: one self-contained page (inline CSS, JS and SVG; no network).

Jinja autoescaping is on for every template, and nothing from a model or a scenario is ever
marked safe; data for the page's script travels as JSON through `tojson`, which escapes
`<`, `>`, `&` and `'`, inside a `<script type="application/json">` block.
"""

from __future__ import annotations

import base64
import hashlib
import os
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from memeval.report.design_figures import COST
from memeval.report.view import build_view
from memeval.rundir.results import RunResults
from memeval.rundir.saved import SavedRun

REPORT_FILE = "report.html"


def render_report(
    run: SavedRun, results: RunResults, out: Path | None = None, *, checks_only: bool = False
) -> Path:
    """Write the report of a saved run with the results it is given and return its path.

    `checks_only`: the results were computed for display (an ungraded run's deterministic
    checks) and are not saved in the run; the page says so.
    """
    view = build_view(run, results)
    view.checks_only = checks_only
    html = render_template("report.html.j2", view=view, design_cost=COST)
    return write_atomic(out or run.path / REPORT_FILE, html)


def render_template(name: str, *, script: bool = True, **context: Any) -> str:
    """Render a page with our stylesheet (and script) inlined under a strict CSP.

    The policy allows no network at all and only our own script (by hash), so even text
    that slipped past escaping could neither run nor load anything.
    """
    js = _static("report.js") if script else Markup("")
    digest = base64.b64encode(hashlib.sha256(str(js).encode("utf-8")).digest()).decode()
    scripts = f"'sha256-{digest}'" if script else "'none'"
    csp = (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        f"script-src {scripts}; base-uri 'none'; form-action 'none'"
    )
    page = environment().get_template(name)
    return page.render(**context, css=_static("report.css"), js=js, csp=csp)


def write_atomic(path: Path, text: str) -> Path:
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("memeval.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(num=_num, secs=_secs, signed=_signed)
    env.globals["static"] = _static
    return env


@cache
def _static(name: str) -> Markup:
    """Our own CSS/JS, inlined verbatim: never anything from a run."""
    text = resources.files("memeval.report").joinpath("static", name).read_text(encoding="utf-8")
    return Markup(text)


def _num(value: float | int | None, digits: int = 0) -> str:
    if value is None:
        return "—"
    return f"{value:,.{digits}f}"


def _secs(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s"


def _signed(value: float | int, digits: int = 0) -> str:
    return f"{value:+,.{digits}f}"
