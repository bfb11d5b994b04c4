"""Tracing a run to Arize Phoenix: OpenTelemetry spans with OpenInference attributes.

`setup_tracing` returns a `Tracing` whose context managers the runner nests:
run -> scenario -> session, then one trace per turn. A turn is the root of its own trace
(carrying `session.id`/`user.id`, linked to its session span) because Phoenix ties a whole
trace to one session: one trace per turn is what makes its Sessions view and the report's
per-turn links work. When Phoenix is missing every method still works and records nothing.
"""

from __future__ import annotations

import atexit
import contextlib
import sys
import threading
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.trace import Link, NonRecordingSpan, Span, SpanContext, TraceFlags
from opentelemetry.trace.status import Status, StatusCode

from memeval.errors import ConfigError
from memeval.tracing import endpoint
from memeval.tracing.attributes import AGENT, CHAIN, KIND, Attributes, io_value, to_json

PROJECT_ATTRIBUTE = "openinference.project.name"
SESSION_ID = "session.id"
USER_ID = "user.id"

# Long message lists and 8,000-char memory files must reach Phoenix whole: the SDK defaults
# (128 attributes per span) would silently drop the tail of a conversation.
SPAN_LIMITS = SpanLimits(
    max_attributes=20_000,
    max_span_attributes=20_000,
    max_event_attributes=1_000,
    max_link_attributes=128,
    max_events=1_000,
    max_links=128,
    max_attribute_length=SpanLimits.UNSET,
    max_span_attribute_length=SpanLimits.UNSET,
)
HEALTH_DEADLINE_S = 1.0
EXPORT_TIMEOUT_S = 3.0
SHUTDOWN_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class _Scope:
    """Where the code currently is in the run: what every turn span is labelled with."""

    run_id: str = ""
    scenario: str = ""
    repeat: int = 0
    session: str = ""
    session_kind: str = ""
    user: str = ""
    session_span: SpanContext | None = None
    in_turn: bool = False  # only spans in a turn's trace carry session.id

    @property
    def session_id(self) -> str:
        """Unique across runs and repeats: Phoenix keys sessions by this id globally."""
        return ":".join([self.run_id or "run", self.scenario, f"r{self.repeat}", self.session])

    def plain(self) -> dict[str, Any]:
        """Where we are, as Phoenix `metadata` (filterable in its UI as metadata['scenario'])."""
        out: dict[str, Any] = {"run_id": self.run_id}
        if self.scenario:
            out.update({"scenario": self.scenario, "repeat": self.repeat})
        if self.session:
            out.update({"session": self.session, "session_kind": self.session_kind})
        return out

    def labels(self) -> Attributes:
        return {f"memeval.{key}": value for key, value in self.plain().items()}

    def session_attributes(self) -> Attributes:
        if not (self.session and self.in_turn):
            return {}
        attrs: Attributes = {SESSION_ID: self.session_id}
        if self.user:
            attrs[USER_ID] = self.user
        return attrs


_scope: ContextVar[_Scope] = ContextVar("memeval_trace_scope", default=_Scope())  # noqa: B039 (frozen)


class Tracing:
    """Spans for one run. Build it with `setup_tracing`; call `shutdown()` when the run ends."""

    def __init__(
        self,
        tracer: trace.Tracer,
        *,
        project: str,
        url: str | None = None,
        provider: TracerProvider | None = None,
        warning: str | None = None,
    ) -> None:
        self.tracer = tracer
        self.project = project
        self.url = url  # the Phoenix base URL when spans go there
        self.warning = warning  # why tracing is off, when it was asked for and is not
        self._provider = provider
        self._closed = False
        if provider is not None:
            atexit.register(self.shutdown)

    @classmethod
    def disabled(cls, project: str = "", warning: str | None = None) -> Tracing:
        return cls(trace.NoOpTracer(), project=project, warning=warning)

    @property
    def enabled(self) -> bool:
        return self._provider is not None

    # -- the run's structure -------------------------------------------------------------
    @contextlib.contextmanager
    def run(self, run_id: str, **metadata: Any) -> Iterator[Span]:
        scope = _Scope(run_id=run_id)
        attrs = {**scope.labels(), **io_value("input", metadata or None)}
        with self._scoped(scope), self.span("run", CHAIN, attrs, metadata=metadata) as span:
            yield span

    @contextlib.contextmanager
    def scenario(self, name: str, repeat: int = 0, **metadata: Any) -> Iterator[Span]:
        scope = replace(_scope.get(), scenario=name, repeat=repeat)
        with (
            self._scoped(scope),
            self.span("scenario", CHAIN, scope.labels(), metadata=metadata) as span,
        ):
            yield span

    @contextlib.contextmanager
    def session(self, session_id: str, user_id: str, kind: str, **metadata: Any) -> Iterator[Span]:
        """The session span (in the run's trace); turns inside it carry `session.id`."""
        scope = replace(_scope.get(), session=session_id, user=user_id, session_kind=kind)
        attrs = {
            **scope.labels(),
            "memeval.session_id": scope.session_id,
            "memeval.user_id": user_id,
        }
        with (
            self.span("session", CHAIN, attrs, metadata=metadata) as span,
            self._scoped(replace(scope, session_span=span.get_span_context())),
        ):
            yield span

    @contextlib.contextmanager
    def turn(
        self,
        turn_id: str,
        user_message: str,
        *,
        session_kind: str | None = None,
        **metadata: Any,
    ) -> Iterator[Span]:
        """The root span of one turn's trace; agent, tool and memory spans nest beneath it.

        Eval turns (a live agent answered) are AGENT spans, replayed seed turns CHAIN spans.
        """
        scope = _scope.get()
        kind = session_kind or scope.session_kind
        attrs: Attributes = {
            **scope.labels(),
            "memeval.turn": turn_id,
            **io_value("input", user_message),
        }
        links = [Link(scope.session_span)] if scope.session_span is not None else None
        all_metadata = {**scope.plain(), "turn": turn_id, **metadata}
        root = otel_context.Context()  # a new trace, not a child of the session span
        with (
            self._scoped(replace(scope, in_turn=True)),
            self.span(
                "turn",
                AGENT if kind == "eval" else CHAIN,
                attrs,
                metadata=all_metadata,
                context=root,
                links=links,
            ) as span,
        ):
            yield span

    # -- building blocks -----------------------------------------------------------------
    @contextlib.contextmanager
    def span(
        self,
        name: str,
        kind: str,
        attributes: Mapping[str, Any] | None = None,
        *,
        metadata: Mapping[str, Any] | None = None,
        context: otel_context.Context | None = None,
        links: list[Link] | None = None,
    ) -> Iterator[Span]:
        """A current span of OpenInference `kind`; inside a session it carries session.id.

        An exception escaping the block marks the span ERROR and is re-raised.
        """
        attrs: dict[str, Any] = {KIND: kind, **_scope.get().session_attributes()}
        attrs.update(attributes or {})
        if metadata:
            attrs["metadata"] = to_json(dict(metadata))
        with self.tracer.start_as_current_span(
            name, context=context, attributes=attrs, links=links
        ) as span:
            yield span

    @contextlib.contextmanager
    def under(self, trace_id: str | None, span_id: str | None) -> Iterator[None]:
        """Make later spans children of a recorded span, e.g. a judge call under its turn."""
        if not (self.enabled and trace_id and span_id):
            yield
            return
        parent = SpanContext(
            int(trace_id, 16),
            int(span_id, 16),
            is_remote=True,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
        )
        token = otel_context.attach(trace.set_span_in_context(NonRecordingSpan(parent)))
        try:
            yield
        finally:
            otel_context.detach(token)

    @contextlib.contextmanager
    def _scoped(self, scope: _Scope) -> Iterator[None]:
        token = _scope.set(scope)
        try:
            yield
        finally:
            _scope.reset(token)

    @staticmethod
    def ids(span: Span) -> tuple[str | None, str | None]:
        return ids(span)

    @staticmethod
    def record_turn_outcome(span: Span, **outcome: Any) -> None:
        record_turn_outcome(span, **outcome)

    def trace_url(self, trace_id: str | None) -> str | None:
        return endpoint.trace_url(self.url, trace_id) if self.url and trace_id else None

    def shutdown(self, timeout_s: float = SHUTDOWN_TIMEOUT_S) -> bool:
        """Flush and stop, waiting at most `timeout_s`; False if spans were left behind."""
        if self._provider is None or self._closed:
            return True
        self._closed = True
        atexit.unregister(self.shutdown)
        worker = threading.Thread(target=self._provider.shutdown, daemon=True)
        worker.start()
        worker.join(timeout_s)
        if worker.is_alive():
            _warn(f"Phoenix did not take the last spans within {timeout_s:g} s; some are lost")
            return False
        return True


def ids(span: Span) -> tuple[str | None, str | None]:
    """(trace id, span id) as Phoenix shows them (hex), or (None, None) when not recording."""
    ctx = span.get_span_context()
    if not ctx.is_valid:
        return None, None
    return trace.format_trace_id(ctx.trace_id), trace.format_span_id(ctx.span_id)


def record_turn_outcome(
    span: Span,
    *,
    answer: str | None = None,
    error: str | None = None,
    update_status: str | None = None,
    file_chars: int | None = None,
    **extra: Any,
) -> None:
    """The turn's answer and outcome on its span; an agent error marks the span ERROR."""
    attrs: dict[str, Any] = dict(io_value("output", answer))
    if update_status is not None:
        attrs["memeval.update.status"] = update_status
    if file_chars is not None:
        attrs["memeval.memory.chars"] = file_chars
    for key, value in extra.items():
        if value is not None:
            attrs[f"memeval.{key}"] = (
                value if isinstance(value, str | int | float | bool) else to_json(value)
            )
    span.set_attributes(attrs)
    if error:
        span.set_attribute("memeval.agent_error", error)
        span.set_status(Status(StatusCode.ERROR, error))


def setup_tracing(
    endpoint_url: str | None,
    project: str,
    *,
    exporter: SpanExporter | None = None,
    health_deadline_s: float = HEALTH_DEADLINE_S,
    export_timeout_s: float = EXPORT_TIMEOUT_S,
) -> Tracing:
    """Tracing to Phoenix at `endpoint_url` (or PHOENIX_COLLECTOR_ENDPOINT), or a no-op.

    A malformed URL is a ConfigError. An unreachable one costs one warning line on stderr and
    at most `health_deadline_s`. `exporter` (tests) receives spans synchronously instead.
    """
    if "/" in project:
        raise ConfigError(f"Phoenix project name {project!r} must not contain '/'")
    url = endpoint.resolve_endpoint(endpoint_url)
    if exporter is None:
        if url is None:
            return Tracing.disabled(project)
        problem = endpoint.check_health(url, health_deadline_s)
        if problem is not None:
            message = f"Phoenix at {url} is not reachable ({problem}); tracing is off for this run"
            _warn(message)
            return Tracing.disabled(project, warning=message)
    provider = TracerProvider(
        resource=Resource.create({PROJECT_ATTRIBUTE: project, "service.name": "memeval"}),
        span_limits=SPAN_LIMITS,
        shutdown_on_exit=False,  # Tracing.shutdown is registered instead: it cannot hang exit
    )
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    else:
        from memeval.tracing.export import batch_processor

        assert url is not None
        provider.add_span_processor(batch_processor(url, export_timeout_s))
    tracer = provider.get_tracer("memeval")
    return Tracing(tracer, project=project, url=url, provider=provider)


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)
