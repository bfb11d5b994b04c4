"""Links the report may contain: only ones built from run.json's own config, validated.

A Phoenix link is `<phoenix url>/redirects/spans/<span id>` (or `/redirects/traces/<trace
id>`), Phoenix's own routes for an OpenTelemetry id. The base must be an http(s) URL and the
ids hex, so neither a model's text nor a scenario can choose where a link points.
"""

from __future__ import annotations

import re
from urllib.parse import quote, urlsplit, urlunsplit

from memeval.rundir.record import PhoenixTarget

_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")
_SPAN_ID = re.compile(r"^[0-9a-f]{16}$")


def phoenix_base(phoenix: PhoenixTarget | None) -> str | None:
    """The Phoenix UI base URL from run.json's `phoenix` block, or None if absent or unsafe."""
    if phoenix is None or phoenix.url is None:
        return None
    try:
        parts = urlsplit(phoenix.url.strip())
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    path = parts.path.rstrip("/")
    if path.endswith("/v1/traces"):  # a collector endpoint was given: the UI lives at its root
        path = path[: -len("/v1/traces")]
    return urlunsplit((parts.scheme, parts.netloc, quote(path, safe="/"), "", ""))


def phoenix_link(base: str | None, trace_id: str | None, span_id: str | None) -> str | None:
    """The Phoenix page for a turn's span (preferred) or trace; None when it cannot be built."""
    if base is None:
        return None
    if span_id and _SPAN_ID.match(span_id.lower()):
        return f"{base}/redirects/spans/{span_id.lower()}"
    if trace_id and _TRACE_ID.match(trace_id.lower()):
        return f"{base}/redirects/traces/{trace_id.lower()}"
    return None
