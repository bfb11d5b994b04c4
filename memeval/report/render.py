"""Render `report.html`: one self-contained page (inline CSS, JS and SVG; no network).

Jinja autoescaping is on for every template, and nothing from a model or a scenario is ever
marked safe; data for the page's script travels as JSON through `tojson`, which escapes
`<`, `>`, `&` and `'`, inside a `<script type="application/json">` block.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from memeval.grading.run import grade_run
from memeval.report.view import build_view
from memeval.rundir.record import read_events, read_run
from memeval.rundir.results import VERDICTS_FILE, RunResults, load_results

REPORT_FILE = "report.html"


def render_report(run_dir: Path, out: Path | None = None) -> Path:
    """Regenerate the report of a saved run and return its path.

    A graded run shows its verdicts.json. An ungraded one is checked in memory (the
    deterministic checks only, nothing written) so its cards still carry verdicts.
    """
    run_dir = Path(run_dir)
    run = read_run(run_dir)
    graded = (run_dir / VERDICTS_FILE).is_file()
    results = load_results(run_dir) if graded else _checks_only(run_dir)
    view = build_view(run_dir, run, read_events(run_dir), results)
    view.checks_only = not graded
    html = render_template("report.html.j2", view=view)
    return write_atomic(out or run_dir / REPORT_FILE, html)


def _checks_only(run_dir: Path) -> RunResults:
    """Deterministic verdicts for an ungraded run, computed without saving or any model."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(grade_run(run_dir, None, save=False))
    # called from async code: grade on a thread of its own rather than nest event loops
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, grade_run(run_dir, None, save=False)).result()


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
