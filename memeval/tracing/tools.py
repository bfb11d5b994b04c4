"""TOOL spans for fixture tool calls: `traced_tool` for one call, `TracedTools` for an agent.

`TracedTools` is a FixtureTools whose `call` records a span, so an agent is traced without
knowing it (no `if tracing` in the agent).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from openinference.semconv.trace import SpanAttributes as SA

from memeval.tools import FixtureTools
from memeval.tracing.attributes import TOOL, io_value

if TYPE_CHECKING:
    from memeval.tracing.spans import Tracing


def traced_tool(
    tracing: Tracing,
    name: str,
    arguments: Mapping[str, Any] | str | None,
    call: Callable[[], Any],
    *,
    description: str = "",
) -> Any:
    """Run `call()` (the tool) inside a TOOL span with its name, arguments and result."""
    if not tracing.enabled:
        return call()
    attrs: dict[str, Any] = {SA.TOOL_NAME: name, **io_value("input", arguments or {})}
    if description:
        attrs[SA.TOOL_DESCRIPTION] = description
    with tracing.span(f"tool.{name}", TOOL, attrs) as span:
        result = call()
        span.set_attributes(io_value("output", result))
        return result


class TracedTools(FixtureTools):
    """The same tools, each call a TOOL span (nested under whatever span is current)."""

    def __init__(self, inner: FixtureTools, tracing: Tracing) -> None:
        # Deliberately not calling super().__init__: every read goes to `inner`.
        self.inner = inner
        self.tracing = tracing
        self._descriptions = {
            spec["function"]["name"]: spec["function"].get("description", "")
            for spec in inner.specs()
        }

    @property
    def names(self) -> list[str]:
        return self.inner.names

    def specs(self) -> list[dict[str, Any]]:
        return self.inner.specs()

    def call(self, name: str, arguments: Mapping[str, Any] | str | None) -> Any:
        return traced_tool(
            self.tracing,
            name,
            arguments,
            lambda: self.inner.call(name, arguments),
            description=self._descriptions.get(name, ""),
        )
