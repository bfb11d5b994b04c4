"""Loading a user's own component from a `package.module:attr` spec."""

from __future__ import annotations

import importlib
import re
from typing import Any

from memeval.errors import ConfigError

SPEC_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


def load_attr(spec: str, what: str) -> Any:
    """Import `package.module:attr`; a bad spec or a missing module/attribute is a one-line
    ConfigError naming what was tried."""
    if not SPEC_RE.match(spec):
        raise ConfigError(f"{what} {spec!r} is not a valid package.module:attr spec")
    module_name, attr = spec.split(":", 1)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"{what} {spec!r}: cannot import {module_name} ({exc})") from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        message = f"{what} {spec!r}: module {module_name} has no attribute {attr!r}"
        raise ConfigError(message) from None
