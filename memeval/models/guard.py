"""A switch that forbids real model requests (tests turn it off; see tests/conftest.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

ALLOW_MODEL_REQUESTS = True


class ModelRequestsForbidden(RuntimeError):
    pass


def check_allowed(spec: str) -> None:
    """Called by every real back end (openai, local) before it sends or computes anything."""
    if not ALLOW_MODEL_REQUESTS:
        raise ModelRequestsForbidden(
            f"real model requests are disabled here ({spec}); use a scripted model, or the "
            "allow_model_requests fixture in a test marked for it"
        )


@contextlib.contextmanager
def model_requests_allowed(allowed: bool = True) -> Iterator[None]:
    global ALLOW_MODEL_REQUESTS
    before = ALLOW_MODEL_REQUESTS
    ALLOW_MODEL_REQUESTS = allowed
    try:
        yield
    finally:
        ALLOW_MODEL_REQUESTS = before
