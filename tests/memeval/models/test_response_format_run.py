"""A whole run against a server that answers json_schema with HTTP 500 naming
`response_format` (as llama-cpp-python's does): one probe steps down, that error is never
retried, and every memory update of the run succeeds."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memeval.cli.app import app
from memeval.health import run_health
from memeval.rundir.record import read_run
from memeval.rundir.saved import SavedRun
from tests.memeval.models.schema_server import SchemaServer

MINI = Path(__file__).resolve().parents[1] / "runner" / "mini.yaml"
runner = CliRunner()


@pytest.fixture
def stub(allow_model_requests: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[SchemaServer]:
    with SchemaServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        yield server


def test_a_run_steps_down_once_and_every_update_succeeds(
    stub: SchemaServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMEVAL_CACHE_DIR", str(tmp_path / "cache"))
    spec = "openai:schema-stub-500"  # its own name: the registry shares one instance per spec
    args = ["run", str(MINI), "--model", spec, "--out", str(tmp_path), "--no-progress"]
    result = runner.invoke(app, [*args, "--updater", "ops", "--safety", "classifier"])
    assert result.exit_code in (0, 1), result.output  # never 4: the pipeline ran
    (run_dir,) = [p for p in tmp_path.iterdir() if p.name != "cache"]

    health = run_health(SavedRun.open(run_dir))
    assert health.updates > 0
    assert health.failed == 0
    assert sum(r.errored for r in health.roles().values()) == 0

    formats = Counter((r.get("response_format") or {}).get("type") for r in stub.requests)
    # the one probe: json_schema strict, json_schema loose, then json_object+schema accepted;
    # a 500 naming response_format is never asked again
    assert formats["json_schema"] == 2
    assert formats["json_object"] > 1
    info = read_run(run_dir)
    learned = {role: i.get("capabilities") for role, i in info.model_info.items()}
    assert learned["updater"] == {
        "json_mode": "json_object+schema",
        "probe_calls": 4,  # and one for tools: the stub answers in text, so they go in the prompt
        "tools": "prompt",
        "usage": "reported",
    }
