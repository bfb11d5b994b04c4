"""`memeval phoenix`: bad input is one line and exit 2; a real start prints the URL and Ctrl-C
stops Phoenix cleanly."""

from __future__ import annotations

import importlib.util
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from memeval.cli import app
from memeval.tracing.phoenix import SETTINGS, PhoenixServer, free_port, phoenix_installed
from tests.conftest import require_service


def test_port_in_use_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        result = CliRunner().invoke(app, ["phoenix", "--port", str(port), "--dir", str(tmp_path)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert lines[-1] == f"error: port {port} on 127.0.0.1 is in use; pass --port with a free one"
    assert "Traceback" not in result.stderr


def test_unwritable_dir_is_one_line_and_exit_2(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    result = CliRunner().invoke(
        app, ["phoenix", "--port", str(free_port()), "--dir", str(blocker / "phoenix")]
    )
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1].startswith(f"error: --dir {blocker}/phoenix:")


def test_server_environment_keeps_phoenix_local_and_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PHOENIX_SQL_DATABASE_URL", "postgresql://elsewhere/db")
    monkeypatch.setenv("PHOENIX_POSTGRES_HOST", "elsewhere")
    env = PhoenixServer(7000, tmp_path, grpc_port=7001).environment()
    assert "PHOENIX_SQL_DATABASE_URL" not in env and "PHOENIX_POSTGRES_HOST" not in env
    assert env["PHOENIX_HOST"] == "127.0.0.1"
    assert (env["PHOENIX_PORT"], env["PHOENIX_GRPC_PORT"]) == ("7000", "7001")
    assert env["PHOENIX_WORKING_DIR"] == str(tmp_path)
    for key in (
        "PHOENIX_TELEMETRY_ENABLED",
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES",
        "PHOENIX_DISABLE_AGENT_ASSISTANT",
        "PHOENIX_ENABLE_MCP_SERVER",
    ):
        assert env[key] == SETTINGS[key]
    # The names are the installed Phoenix's own (a rename would silently re-enable a feature);
    # read from its source, since importing phoenix takes many seconds.
    spec = importlib.util.find_spec("phoenix")
    assert spec is not None and spec.submodule_search_locations
    config = Path(next(iter(spec.submodule_search_locations)), "config.py").read_text("utf-8")
    for name in SETTINGS:
        assert f'= "{name}"' in config, name


@pytest.mark.phoenix
@pytest.mark.slow
def test_memeval_phoenix_prints_the_url_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    require_service(
        "Phoenix", phoenix_installed(), "arize-phoenix is not installed (memeval[phoenix])"
    )
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "memeval", "phoenix", "--port", str(port), "--dir", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    lines: queue.Queue[str] = queue.Queue()
    assert process.stdout is not None
    stdout = process.stdout
    threading.Thread(target=lambda: [lines.put(line) for line in stdout], daemon=True).start()
    try:
        first = lines.get(timeout=300)  # a cold start on a busy 2-core machine is slow
        assert first.strip() == f"Phoenix is up: http://127.0.0.1:{port}"
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
        assert (tmp_path / "phoenix.db").is_file()
        started = time.monotonic()
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=240)  # the behaviour is stopping, not its speed
        print(f"stopped {time.monotonic() - started:.1f} s after Ctrl-C")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert code == 0
    assert process.stderr is not None
    assert process.stderr.read().strip().splitlines()[-1] == "Phoenix stopped."
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
