"""OTLP/HTTP export to Phoenix: batched, short timeouts, and at most one warning line.

The OTLP exporter logs every failed batch; when Phoenix goes away mid-run that would be a
stream of log lines. Failures are reported once here instead, and the run goes on.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Sequence

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from memeval.tracing.endpoint import TRACES_PATH, auth_headers

_OTLP_LOGGER = "opentelemetry.exporter.otlp.proto.http.trace_exporter"
BATCH_SIZE = 64  # spans carry whole memory files and conversations: keep requests moderate
SCHEDULE_DELAY_MS = 500


class _DropRecords(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return False


_DROP = _DropRecords()


class WarnOnceExporter(SpanExporter):
    """Delegates to `inner`; the first failed export prints one warning, later ones nothing."""

    def __init__(self, inner: SpanExporter, url: str) -> None:
        self._inner = inner
        self._url = url
        self._warned = threading.Event()
        self.failures = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self._inner.export(spans)
            reason = "the collector refused or did not answer"
        except Exception as exc:  # an exporter bug must not reach the run
            result, reason = SpanExportResult.FAILURE, f"{type(exc).__name__}: {exc}"
        if result is not SpanExportResult.SUCCESS:
            self.failures += 1
            if not self._warned.is_set():
                self._warned.set()
                print(
                    f"warning: sending spans to Phoenix at {self._url} failed ({reason}); "
                    "the run goes on, later failures are not shown",
                    file=sys.stderr,
                    flush=True,
                )
        return result

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self._inner.force_flush(timeout_millis)


def batch_processor(url: str, timeout_s: float) -> BatchSpanProcessor:
    """A BatchSpanProcessor sending to `<url>/v1/traces` with a `timeout_s` export deadline."""
    logger = logging.getLogger(_OTLP_LOGGER)
    if _DROP not in logger.filters:
        logger.addFilter(_DROP)
    exporter = OTLPSpanExporter(
        endpoint=f"{url}{TRACES_PATH}", timeout=timeout_s, headers=auth_headers() or None
    )
    return BatchSpanProcessor(
        WarnOnceExporter(exporter, url),
        max_export_batch_size=BATCH_SIZE,
        schedule_delay_millis=SCHEDULE_DELAY_MS,
        export_timeout_millis=timeout_s * 1000,
    )
