"""Shared test set-up: no real model requests, and services that must not silently skip in CI."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

from memeval.models import guard

# Property tests check behaviour, never speed: hypothesis' default 200 ms deadline per example
# fails them on a loaded machine (a run beside the embedded model measured 272 ms for one).
settings.register_profile("memeval", deadline=None)
settings.load_profile("memeval")

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
PG_DSN = os.environ.get("MEMEVAL_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")


@pytest.fixture(autouse=True)
def _no_model_requests(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Forbid real model calls and hide any endpoint configuration from the environment."""
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PHOENIX_COLLECTOR_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    with guard.model_requests_allowed(False):
        yield


@pytest.fixture
def allow_model_requests() -> Iterator[None]:
    """For tests marked local_model (the real embedded model) or talking to a local fake server."""
    with guard.model_requests_allowed(True):
        yield


def require_service(name: str, reachable: bool, detail: str) -> None:
    """Skip when a service is missing on a developer machine; fail when CI=true."""
    if reachable:
        return
    message = f"{name} unavailable: {detail}"
    if IN_CI:
        pytest.fail(message + " (CI=true: services must be reachable)")
    pytest.skip(message)


@pytest.fixture
def pg_dsn() -> str:
    import psycopg

    try:
        with psycopg.connect(PG_DSN, connect_timeout=3) as conn:
            conn.execute("select 1")
    except Exception as exc:  # any connection failure means "unreachable"
        require_service("PostgreSQL", False, f"{PG_DSN}: {exc}")
    return PG_DSN
