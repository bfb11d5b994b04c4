"""The embedded model behind an OpenAI-compatible endpoint, for libraries that only speak HTTP.

Mem0 calls its LLM through the `openai` package, so a `local:NAME` updater is served by
llama-cpp-python's own server (`python -m llama_cpp.server`) on 127.0.0.1: one process per
model file, started on first use, shared by every unit of the process, stopped at exit.
Its context holds Mem0's ≈8.4k-token extraction prompt (the in-process model's does not).
"""

from __future__ import annotations

import atexit
import importlib.util
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from memeval.errors import ConfigError
from memeval.models.spec import local_threads

N_CTX = 16384  # Mem0 2.x's add() prompt is ≈8.4k tokens before the turn itself
SEED = 0  # as the in-process model (memeval.models.local)
START_TIMEOUT_S = 180.0
SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context")


class LlamaServer:
    """One `python -m llama_cpp.server` child process serving one GGUF file."""

    def __init__(self, gguf: Path, alias: str, log_path: Path, *, n_ctx: int = N_CTX) -> None:
        self.gguf = gguf
        self.alias = alias
        self.log_path = log_path
        self.n_ctx = n_ctx
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout_s: float = START_TIMEOUT_S) -> str:
        """Start the server and wait until it answers; the base URL, or ConfigError saying
        why it did not come up (the log's tail included)."""
        missing = [name for name in SERVER_MODULES if importlib.util.find_spec(name) is None]
        if missing:
            raise ConfigError(
                f"serving {self.alias} to mem0 needs llama-cpp-python's server "
                f"(missing: {', '.join(missing)}): pip install 'memeval[local,mem0]'"
            )
        self.port = free_port()
        threads = str(local_threads())
        args = [sys.executable, "-m", "llama_cpp.server", "--model", str(self.gguf)]
        args += ["--model_alias", self.alias, "--host", "127.0.0.1", "--port", str(self.port)]
        args += ["--n_ctx", str(self.n_ctx), "--seed", str(SEED), "--verbose", "false"]
        args += ["--n_threads", threads, "--n_threads_batch", threads]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            self._proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while not self._ready():
            if self._proc.poll() is not None:
                raise ConfigError(
                    f"llama_cpp.server for {self.alias} exited {self._proc.returncode}: "
                    f"{self._log_tail()}"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise ConfigError(
                    f"llama_cpp.server for {self.alias} did not answer within {timeout_s:.0f}s: "
                    f"{self._log_tail()}"
                )
            time.sleep(0.5)
        return self.base_url

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _ready(self) -> bool:
        try:
            return httpx.get(f"{self.base_url}/models", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def _log_tail(self) -> str:
        try:
            text = self.log_path.read_text("utf-8", errors="replace")
        except OSError:
            return f"(no log at {self.log_path})"
        return " ".join(text[-600:].split()) or f"(empty log at {self.log_path})"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


_servers: dict[Path, LlamaServer] = {}
_lock = threading.Lock()


def serve(gguf: Path, alias: str, log_path: Path) -> str:
    """The base URL of the server for `gguf`, started on first use (its log at `log_path`)
    and reused by every later caller in the process."""
    with _lock:
        server = _servers.get(gguf)
        if server is None or not server.running:
            server = LlamaServer(gguf, alias, log_path)
            server.start()
            _servers[gguf] = server
        return server.base_url


@atexit.register
def stop_all() -> None:
    with _lock:
        for server in _servers.values():
            server.stop()
        _servers.clear()
