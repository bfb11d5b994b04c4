"""A local Phoenix server for one user: loopback only, our data directory, nothing phoning out.

`memeval phoenix` and the integration tests share this. Phoenix runs as a child process
(`python -m phoenix.server.main serve`) in its own session, so Ctrl-C reaches memeval,
which then stops it cleanly; its log goes to `<dir>/phoenix.log`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from memeval.errors import ConfigError, MemevalError

DEFAULT_PORT = 6006
DEFAULT_GRPC_PORT = 4317
DEFAULT_DIR = Path("~/.local/share/memeval/phoenix")
HOST = "127.0.0.1"
LOG_FILE = "phoenix.log"
STARTUP_TIMEOUT_S = 90.0

# Settings read by the installed arize-phoenix (phoenix/config.py).
SETTINGS = {
    "PHOENIX_HOST": HOST,
    "PHOENIX_TELEMETRY_ENABLED": "false",
    "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
    "PHOENIX_DISABLE_AGENT_ASSISTANT": "true",
    "PHOENIX_ENABLE_MCP_SERVER": "false",
    "PHOENIX_AGENTS_DISABLE_BASH": "true",
    "PHOENIX_AGENTS_DISABLE_WEB_ACCESS": "true",
    "PHOENIX_AGENTS_DISABLE_GITHUB": "true",
    "PHOENIX_LOG_MIGRATIONS": "false",
}
# Variables that would move Phoenix's data out of our directory.
DROPPED = ("PHOENIX_SQL_DATABASE_URL", "PHOENIX_SQL_DATABASE_SCHEMA", "PHOENIX_POSTGRES_")


class PhoenixStartError(MemevalError):
    """Phoenix could not start; the message says why and where its log is."""


def port_is_free(port: int, host: str = HOST) -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def phoenix_installed() -> bool:
    """Whether the Phoenix server (arize-phoenix, not only its client) is installed."""
    from importlib import metadata

    try:
        metadata.version("arize-phoenix")
    except metadata.PackageNotFoundError:
        return False
    return True


class PhoenixServer:
    """Start with `start()` (or `with PhoenixServer(...) as server:`), stop with `stop()`."""

    def __init__(
        self, port: int = DEFAULT_PORT, data_dir: Path = DEFAULT_DIR, grpc_port: int | None = None
    ) -> None:
        if not 0 < port < 65536:
            raise ConfigError(f"--port {port} is not a TCP port (1-65535)")
        self.port = port
        self.data_dir = Path(data_dir).expanduser()
        self.grpc_port = grpc_port
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.data_dir / LOG_FILE

    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(DROPPED)}
        env.update(SETTINGS)
        env["PHOENIX_PORT"] = str(self.port)
        env["PHOENIX_GRPC_PORT"] = str(self.grpc_port)
        env["PHOENIX_WORKING_DIR"] = str(self.data_dir)
        return env

    def start(self, timeout_s: float = STARTUP_TIMEOUT_S) -> None:
        """Start Phoenix and return once it answers its health check."""
        if not phoenix_installed():
            raise ConfigError(
                "arize-phoenix is not installed; install it with pip install 'memeval[phoenix]'"
            )
        if not port_is_free(self.port):
            raise ConfigError(f"port {self.port} on {HOST} is in use; pass --port with a free one")
        if self.grpc_port is None:
            # Phoenix always opens an OTLP/gRPC port too; take its default only when free.
            self.grpc_port = (
                DEFAULT_GRPC_PORT if port_is_free(DEFAULT_GRPC_PORT, "") else free_port()
            )
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            log = open(self.log_path, "ab")  # noqa: SIM115 (the child keeps it)
        except OSError as exc:
            raise ConfigError(
                f"--dir {self.data_dir}: cannot write there ({exc.strerror})"
            ) from None
        with log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "phoenix.server.main", "serve"],
                env=self.environment(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C goes to us; we stop Phoenix in order
            )
        try:
            self._wait_healthy(timeout_s)
        except BaseException:
            self.stop()
            raise

    def _wait_healthy(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise PhoenixStartError(
                    f"Phoenix exited with code {self.process.returncode} while starting: "
                    f"{self._last_error()} (log: {self.log_path})"
                )
            if self.healthy():
                return
            time.sleep(0.25)
        raise PhoenixStartError(
            f"Phoenix did not answer within {timeout_s:g} s (log: {self.log_path})"
        )

    def healthy(self) -> bool:
        import httpx  # here, not at module level: `memeval --help` should not pay for it

        try:
            return httpx.get(f"{self.url}/healthz", timeout=1.0).status_code == 200
        except httpx.HTTPError:
            return False

    def wait(self) -> int:
        """Block until Phoenix exits on its own; its exit code."""
        assert self.process is not None
        return self.process.wait()

    def stop(self, timeout_s: float = 15.0) -> None:
        """SIGINT (Phoenix shuts down cleanly), then SIGTERM, then SIGKILL if it must."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        grace = max(timeout_s - 5.0, 1.0)
        for sig, wait_s in ((signal.SIGINT, grace), (signal.SIGTERM, 4.0), (signal.SIGKILL, 1.0)):
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(sig)
            try:
                process.wait(wait_s)
                return
            except subprocess.TimeoutExpired:
                continue

    def _last_error(self) -> str:
        try:
            lines = self.log_path.read_text("utf-8", errors="replace").splitlines()[-40:]
        except OSError:
            return "no log"
        errors = [line for line in lines if "Error" in line or "error" in line]
        return (errors or lines or ["no output"])[-1].strip()[:300]

    def __enter__(self) -> PhoenixServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def running_phoenix(data_dir: Path, port: int | None = None) -> Iterator[PhoenixServer]:
    """A Phoenix on free loopback ports for tests and benchmarks; stopped on exit."""
    server = PhoenixServer(port or free_port(), data_dir, grpc_port=free_port())
    with server:
        yield server
