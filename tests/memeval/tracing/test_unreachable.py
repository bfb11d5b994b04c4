"""A missing or mute Phoenix costs one warning line and under 2 s; the run goes on."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from memeval.errors import ConfigError
from memeval.rundir.record import read_events, read_run
from memeval.tracing.endpoint import normalize_endpoint
from memeval.tracing.spans import setup_tracing
from tests.memeval.clirun import memeval_run

from .flow import run_flow

BOUND_S = 2.0  # the bound; the check is designed to take ~1 s


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def refused_url() -> str:
    return f"http://127.0.0.1:{free_port()}"  # nothing listens there


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A collector that accepts every connection and never says a word."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join(2)
    for conn in held:
        conn.close()
    server.close()


@pytest.mark.parametrize("which", ["refused_url", "silent_url"])
async def test_unreachable_collector_costs_one_warning_and_under_2s(
    which: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    url = request.getfixturevalue(which)
    started = time.perf_counter()
    tracing = setup_tracing(url, "memeval-test")
    elapsed = time.perf_counter() - started
    result = await run_flow(tracing)  # the whole flow still works, recording nothing
    assert tracing.shutdown() is True
    print(f"[{which}] setup_tracing took {elapsed:.3f} s")  # shown with -s
    assert elapsed < BOUND_S
    assert not tracing.enabled
    assert result.turn_ids == {"s1t1": (None, None), "s2q1": (None, None)}
    assert len(result.file) > 7800
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"warning: Phoenix at {url} is not reachable (")
    assert lines[0].endswith("tracing is off for this run")
    assert ("refused" if which == "refused_url" else "no answer within") in lines[0]


async def test_env_endpoint_is_used_when_no_option_given(
    refused_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PHOENIX_COLLECTOR_ENDPOINT", refused_url + "/v1/traces")
    tracing = setup_tracing(None, "memeval-test")
    assert not tracing.enabled
    assert f"Phoenix at {refused_url} is not reachable" in capsys.readouterr().err


class _HealthyButMute(BaseHTTPRequestHandler):
    """Answers the health check, then never answers an export (until the test ends)."""

    release = threading.Event()

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"OK")

    def do_POST(self) -> None:
        self.release.wait(30)

    def log_message(self, *args: object) -> None:
        pass


async def test_collector_that_goes_mute_mid_run_cannot_hang_shutdown(
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _HealthyButMute)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        tracing = setup_tracing(url, "memeval-test", export_timeout_s=1.0)
        assert tracing.enabled
        await run_flow(tracing)
        started = time.perf_counter()
        tracing.shutdown(timeout_s=2.0)
        elapsed = time.perf_counter() - started
    finally:
        _HealthyButMute.release.set()
        server.shutdown()
        server.server_close()
    assert elapsed < 3.0
    warnings = [line for line in capsys.readouterr().err.splitlines() if line]
    assert 1 <= len(warnings) <= 2, warnings  # the failed export, maybe the lost-spans note
    assert warnings[0].startswith(f"warning: sending spans to Phoenix at {url} failed")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("http://127.0.0.1:6006", "http://127.0.0.1:6006"),
        ("http://127.0.0.1:6006/", "http://127.0.0.1:6006"),
        ("http://127.0.0.1:6006/v1/traces", "http://127.0.0.1:6006"),
        ("localhost:6006", "http://localhost:6006"),
        ("https://phoenix.example/team/", "https://phoenix.example/team"),
    ],
)
def test_endpoint_forms(raw: str, expected: str) -> None:
    assert normalize_endpoint(raw) == expected


@pytest.mark.parametrize("raw", ["ftp://host:1", "http://", "http://host:port"])
def test_malformed_endpoint_is_bad_input(raw: str) -> None:
    with pytest.raises(ConfigError, match="expected"):
        setup_tracing(raw, "p")


def test_project_name_with_a_slash_is_bad_input() -> None:
    with pytest.raises(ConfigError, match="must not contain"):
        setup_tracing(None, "team/run")


@pytest.mark.slow
@pytest.mark.parametrize("which", ["refused_url", "silent_url"])
def test_memeval_run_with_a_missing_collector_exits_0_with_one_warning(
    which: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = request.getfixturevalue(which)
    ran = memeval_run("book-summary", "--model", "fake", "--phoenix", url, out=tmp_path)
    print(f"[{which}] memeval run took {ran.seconds:.1f} s")  # shown with -s
    assert ran.code == 0, ran.stderr
    warnings = [line for line in ran.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, ran.stderr
    assert warnings[0].startswith(f"warning: Phoenix at {url} is not reachable")
    assert ran.run_dir is not None
    assert read_run(ran.run_dir).phoenix is None  # recorded as untraced
    assert all(e.trace_id is None for e in read_events(ran.run_dir))
