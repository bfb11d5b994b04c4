"""memeval against a real OpenAI-compatible server, as users run it: llama-cpp-python's own
server (`python -m llama_cpp.server`) serving the embedded 0.5B model on 127.0.0.1, started
and stopped here. `memeval models check` reports what works, and `memeval run` with every
role on `openai:` and each updater and safety strategy makes no failed update and no failed
call."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memeval.health import run_health
from memeval.models.weights import ensure_weights, lookup
from memeval.rundir.record import read_run
from memeval.rundir.saved import SavedRun
from tests.memeval.clirun import memeval_cli

pytestmark = pytest.mark.local_model

REPO = Path(__file__).resolve().parents[3]
MINI = Path(__file__).with_name("server_mini.yaml")  # two turns: a run takes minutes
ALIAS = "qwen-0.5b-served"
SPEC = f"openai:{ALIAS}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    gguf = ensure_weights(lookup("qwen2.5-coder-0.5b"))
    port = free_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    args = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf)]
    args += ["--model_alias", ALIAS, "--host", "127.0.0.1", "--port", str(port)]
    args += ["--n_ctx", "8192", "--n_threads", "2", "--verbose", "false"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited {proc.returncode}: {log.read_text()[-1500:]}")
            try:
                if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not start: {log.read_text()[-1500:]}")
            time.sleep(0.5)
        yield base_url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def memeval(base_url: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": None, "COLUMNS": "160"}
    return memeval_cli(*args, cache=tmp_path / "cache", env=env, timeout_s=1500)


def test_models_check_reports_what_the_server_accepts(server: str, tmp_path: Path) -> None:
    done = memeval(server, tmp_path, "models", "check", SPEC)
    assert done.returncode == 0, done.stderr
    out = " ".join(done.stdout.split())
    # the server refuses json_schema with HTTP 500 and ignores `tools`
    assert re.search(r"json: json_schema\s+│\s+no\s+│\s+rejected: HTTP 500", done.stdout)
    assert re.search(r"json: json_object\+schema\s+│\s+yes", done.stdout)
    assert "memeval will use: json mode: json_object+schema" in out
    assert "tools: in the prompt" in out


def test_models_check_names_an_unreachable_endpoint_in_one_line(tmp_path: Path) -> None:
    done = memeval(f"http://127.0.0.1:{free_port()}/v1", tmp_path, "models", "check", SPEC)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "cannot reach http://127.0.0.1:" in done.stderr


@pytest.mark.parametrize(
    ("updater", "safety"),
    [("ops", "classifier"), ("ops-constrained", "checklist"), ("cascade", "classifier")],
)
def test_a_run_with_every_role_on_the_server_has_no_failures(
    server: str, tmp_path: Path, updater: str, safety: str
) -> None:
    out = tmp_path / "runs"
    args = ["run", str(MINI), "--model", SPEC, "--out", str(out), "--no-progress"]
    done = memeval(server, tmp_path, *args, "--updater", updater, "--safety", safety)
    assert done.returncode in (0, 1), done.stderr[-2000:]  # 1: a question failed; never 4
    (run_dir,) = list(out.iterdir())
    health = run_health(SavedRun.open(run_dir))
    assert health.updates > 0
    assert health.failed == 0
    errors = {role: r.errored for role, r in health.roles().items() if r.errored}
    assert not errors, errors
    info = read_run(run_dir)
    assert info.models["updater"] == SPEC and info.strategies["updater"] == updater
    assert info.model_info["updater"]["capabilities"]["json_mode"] == "json_object+schema"
