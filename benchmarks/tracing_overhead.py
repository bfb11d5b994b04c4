"""What does tracing cost? Prints numbers; asserts nothing.

1. setup_tracing against a missing collector (refused port) and a mute one (accepts, never
   answers): the price of a wrong --phoenix URL (the issue's bound is 2 s).
2. The scripted combined-run flow of the tracing tests (2 turns, 22 spans, a memory file
   near the 8,000-char cap) with tracing off, into memory, and batched over OTLP/HTTP to a
   local sink that answers 200: the wrappers' cost per flow and per span.
3. Tracing.shutdown() when the collector stops answering mid-run (export timeout 1 s).

    .venv/bin/python benchmarks/tracing_overhead.py [--flows 50]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import socket
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from memeval.tracing.spans import Tracing, setup_tracing
from tests.memeval.tracing.flow import run_flow


class _Sink(BaseHTTPRequestHandler):
    mute = threading.Event()

    def do_GET(self) -> None:
        self._ok()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.mute.is_set():
            time.sleep(30)
        self._ok()

    def _ok(self) -> None:
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def sink() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def mute_listener() -> Iterator[str]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)  # the kernel completes handshakes; nobody ever reads or answers
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        server.close()


def refused_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def time_setup(url: str, repeats: int = 3) -> list[float]:
    out = []
    for _ in range(repeats):
        started = time.perf_counter()
        with contextlib.redirect_stderr(io.StringIO()):
            setup_tracing(url, "bench")
        out.append(time.perf_counter() - started)
    return out


async def time_flows(tracing: Tracing, flows: int) -> list[float]:
    out = []
    for _ in range(flows):
        started = time.perf_counter()
        await run_flow(tracing)
        out.append(time.perf_counter() - started)
    return out


def show(label: str, seconds: list[float], per: int = 1, unit: str = "ms") -> None:
    scale = 1000.0 if unit == "ms" else 1.0
    med = statistics.median(seconds) * scale / per
    worst = max(seconds) * scale / per
    print(f"  {label:<44} median {med:8.2f} {unit}   max {worst:8.2f} {unit}")


async def main(flows: int) -> None:
    print("setup_tracing with a wrong --phoenix URL (3 tries each):")
    show("refused port", time_setup(refused_url()), unit="s")
    with mute_listener() as url:
        show("mute listener (accepts, never answers)", time_setup(url), unit="s")

    exporter = InMemorySpanExporter()
    await run_flow(setup_tracing(None, "count", exporter=exporter))
    spans = len(exporter.get_finished_spans())
    print(f"\nscripted flow ({spans} spans), {flows} flows each, per flow:")
    off = await time_flows(setup_tracing(None, "bench"), flows)
    show("tracing off", off)
    memory = await time_flows(setup_tracing(None, "bench", exporter=InMemorySpanExporter()), flows)
    show("in-memory exporter (synchronous)", memory)
    with sink() as url:
        otlp = setup_tracing(url, "bench")
        batched = await time_flows(otlp, flows)
        show("OTLP/HTTP, batched, local sink", batched)
        started = time.perf_counter()
        otlp.shutdown()
        print(f"  {'flush + shutdown after the flows':<44} {time.perf_counter() - started:.3f} s")
        extra = (statistics.median(batched) - statistics.median(off)) / spans
        print(f"  {'tracing cost per span (OTLP - off)':<44} {extra * 1e6:8.1f} us")

        _Sink.mute.set()
        mute = setup_tracing(url, "bench", export_timeout_s=1.0)
        await time_flows(mute, 5)
        started = time.perf_counter()
        with contextlib.redirect_stderr(io.StringIO()):
            mute.shutdown(timeout_s=2.0)
        took = time.perf_counter() - started
        print(f"\nshutdown when the collector goes mute mid-run: {took:.2f} s (bound 2 s)")
        _Sink.mute.clear()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flows", type=int, default=50)
    asyncio.run(main(parser.parse_args().flows))
