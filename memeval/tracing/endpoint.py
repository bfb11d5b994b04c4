"""Where Phoenix is and whether it answers: URL normalising, a bounded health check, links.

The health check runs on a daemon thread with a hard deadline, so a collector that accepts
connections and never answers (or a hostname that never resolves) costs at most the deadline.
"""

from __future__ import annotations

import os
import threading
from urllib.parse import quote, urlsplit

import httpx

from memeval.errors import ConfigError

ENDPOINT_ENV = "PHOENIX_COLLECTOR_ENDPOINT"
API_KEY_ENV = "PHOENIX_API_KEY"
PROJECT_ENV = "PHOENIX_PROJECT_NAME"
TRACES_PATH = "/v1/traces"


def resolve_endpoint(endpoint: str | None) -> str | None:
    """The Phoenix base URL from `--phoenix` or PHOENIX_COLLECTOR_ENDPOINT, or None for off."""
    raw = (endpoint or os.environ.get(ENDPOINT_ENV) or "").strip()
    return normalize_endpoint(raw) if raw else None


def normalize_endpoint(raw: str) -> str:
    """`host:6006`, `http://host:6006/` and `http://host:6006/v1/traces` all name one server."""
    url = raw.strip() if "://" in raw else f"http://{raw.strip()}"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"--phoenix {raw!r} is not a Phoenix URL; expected http(s)://HOST:PORT, "
            "e.g. http://127.0.0.1:6006"
        )
    try:
        parts.port  # noqa: B018  (raises on a non-numeric port)
    except ValueError:
        raise ConfigError(
            f"--phoenix {raw!r} has an invalid port; expected e.g. http://127.0.0.1:6006"
        ) from None
    path = parts.path.rstrip("/")
    if path.endswith(TRACES_PATH):
        path = path[: -len(TRACES_PATH)]
    return f"{parts.scheme}://{parts.netloc}{path}"


def auth_headers() -> dict[str, str]:
    """A bearer token for a Phoenix with authentication on (PHOENIX_API_KEY), else nothing."""
    key = os.environ.get(API_KEY_ENV, "").strip()
    return {"authorization": f"Bearer {key}"} if key else {}


def check_health(base_url: str, deadline_s: float = 1.0) -> str | None:
    """None when the server answers HTTP within `deadline_s`, else why not (one short phrase)."""
    outcome: list[str | None] = []

    def probe() -> None:
        try:
            response = httpx.get(f"{base_url}/healthz", timeout=deadline_s, headers=auth_headers())
        except httpx.ConnectError as exc:
            reason = _reason(exc)
            outcome.append(reason if "refused" in reason else f"cannot connect: {reason}")
        except httpx.TimeoutException:
            outcome.append(f"no answer within {deadline_s:g} s")
        except httpx.HTTPError as exc:
            outcome.append(f"{type(exc).__name__}: {_reason(exc)}")
        else:
            # Any HTTP answer below 500 means something is listening and speaking HTTP; a
            # plain OTLP collector has no /healthz and answers 404, which is fine.
            outcome.append(None if response.status_code < 500 else f"HTTP {response.status_code}")

    worker = threading.Thread(target=probe, name="memeval-phoenix-health", daemon=True)
    worker.start()
    worker.join(deadline_s + 0.25)
    if not outcome:
        return f"no answer within {deadline_s:g} s"
    return outcome[0]


def _reason(exc: Exception) -> str:
    text = str(exc).strip() or type(exc).__name__
    if "refused" in text.lower():
        return "connection refused"
    return text.splitlines()[0][:160]


def default_project(run_id: str) -> str:
    """One Phoenix project per run unless PHOENIX_PROJECT_NAME names a shared one."""
    named = os.environ.get(PROJECT_ENV, "").strip()
    return named or f"memeval-{run_id}"


def trace_url(base_url: str, trace_id: str) -> str:
    """A link that opens one trace in the Phoenix UI (Phoenix resolves the project itself)."""
    return f"{base_url}/redirects/traces/{quote(trace_id, safe='')}"


def span_url(base_url: str, span_id: str) -> str:
    return f"{base_url}/redirects/spans/{quote(span_id, safe='')}"


def session_url(base_url: str, session_id: str) -> str:
    return f"{base_url}/redirects/sessions/{quote(session_id, safe='')}"
