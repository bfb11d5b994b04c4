"""Against a real Phoenix on a free loopback port: spans, sessions and a grade read back."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from memeval.rundir.record import PhoenixTarget, read_events, read_run
from memeval.tracing.annotations import Annotation, log_annotations
from memeval.tracing.phoenix import PhoenixServer, phoenix_installed, running_phoenix
from memeval.tracing.spans import setup_tracing
from tests.conftest import require_service
from tests.memeval.clirun import memeval_run

from .flow import RUN_ID, SCENARIO, USER, run_flow

pytestmark = pytest.mark.phoenix
T = TypeVar("T")


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PhoenixServer]:
    require_service(
        "Phoenix", phoenix_installed(), "arize-phoenix is not installed (memeval[phoenix])"
    )
    with running_phoenix(tmp_path_factory.mktemp("phoenix")) as server:
        yield server


def poll(fetch: Callable[[], T], ready: Callable[[T], bool], timeout_s: float = 60.0) -> T:
    """Phoenix inserts spans and annotations in the background: ask until they are there
    (a project that does not exist yet answers 404)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            value = fetch()
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code != 404 or time.monotonic() > deadline:
                raise
        else:
            if ready(value) or time.monotonic() > deadline:
                return value
        time.sleep(0.5)


def by_name(spans: list[Any], name: str) -> list[Any]:
    return [s for s in spans if s["name"] == name]


async def expected_span_count() -> int:
    exporter = InMemorySpanExporter()
    await run_flow(setup_tracing(None, "count", exporter=exporter))
    return len(exporter.get_finished_spans())


async def test_spans_sessions_and_a_grade_round_trip(phoenix: PhoenixServer) -> None:
    from phoenix.client import Client

    project = "memeval-live-flow"
    tracing = setup_tracing(phoenix.url, project)
    assert tracing.enabled and tracing.url == phoenix.url
    result = await run_flow(tracing)
    assert tracing.shutdown() is True
    want = await expected_span_count()

    client = Client(base_url=phoenix.url)
    spans = poll(
        lambda: client.spans.get_spans(project_identifier=project, limit=1000),
        lambda got: len(got) >= want,
    )
    assert len(spans) == want

    turns = {s["attributes"]["memeval.turn"]: s for s in by_name(spans, "turn")}
    assert set(turns) == {"s1t1", "s2q1"}
    for turn_id, session in (("s1t1", "s1"), ("s2q1", "s2")):
        attributes = turns[turn_id]["attributes"]
        assert attributes["session.id"] == f"{RUN_ID}:{SCENARIO}:r0:{session}"
        assert attributes["user.id"] == USER
        assert turns[turn_id]["context"]["trace_id"] == result.turn_ids[turn_id][0]
        assert turns[turn_id]["context"]["span_id"] == result.turn_ids[turn_id][1]

    # the memory file near the cap arrives whole
    updates = {s["context"]["trace_id"]: s for s in by_name(spans, "memory.update")}
    seed_update = updates[result.turn_ids["s1t1"][0]]["attributes"]
    assert seed_update["memeval.memory.file_after"] == result.file
    assert len(result.file) > 7800
    assert by_name(spans, "safety")[0]["span_kind"] == "GUARDRAIL"

    # Phoenix files each turn's trace under its session, and the run's trace under none
    sessions = {s["session_id"]: s for s in client.sessions.list(project_name=project)}
    assert set(sessions) == {f"{RUN_ID}:{SCENARIO}:r0:s1", f"{RUN_ID}:{SCENARIO}:r0:s2"}
    eval_session = sessions[f"{RUN_ID}:{SCENARIO}:r0:s2"]
    assert [t["trace_id"] for t in eval_session["traces"]] == [result.turn_ids["s2q1"][0]]
    assert eval_session.get("token_count_total") == 256  # the two scripted agent calls

    span_id = result.turn_ids["s2q1"][1]
    assert span_id is not None
    grade = Annotation(
        span_id=span_id,
        name="question",
        annotator_kind="HUMAN",
        label="pass",
        explanation="cites 812 rows",
        metadata={"run_id": RUN_ID, "source": "human"},
    )
    assert log_annotations(phoenix.url, project, [grade]) == 1
    found = poll(
        lambda: client.spans.get_span_annotations(span_ids=[span_id], project_identifier=project),
        lambda got: len(got) > 0,
    )
    assert [(a["name"], a["annotator_kind"]) for a in found] == [("question", "HUMAN")]
    assert found[0]["result"] == {"label": "pass", "score": 1.0, "explanation": "cites 812 rows"}


def test_server_keeps_its_data_in_our_directory(phoenix: PhoenixServer) -> None:
    assert phoenix.healthy()
    assert Path(phoenix.data_dir, "phoenix.db").is_file()
    assert phoenix.log_path.is_file()
    env = phoenix.environment()
    assert env["PHOENIX_HOST"] == "127.0.0.1"
    assert env["PHOENIX_WORKING_DIR"] == str(phoenix.data_dir)


def test_memeval_run_with_phoenix_traces_the_scenario_and_its_grades(
    phoenix: PhoenixServer, tmp_path: Path
) -> None:
    from phoenix.client import Client

    ran = memeval_run("book-summary", "--model", "fake", "--phoenix", phoenix.url, out=tmp_path)
    assert ran.code == 0, ran.stderr
    assert "warning:" not in ran.stderr
    assert ran.run_dir is not None
    info = read_run(ran.run_dir)
    assert info.phoenix == PhoenixTarget(url=phoenix.url, project=f"memeval-{info.run_id}")
    project = info.phoenix.project
    events = read_events(ran.run_dir)
    assert events and all(e.trace_id and e.span_id for e in events)

    client = Client(base_url=phoenix.url)
    turns = poll(
        lambda: client.spans.get_spans(project_identifier=project, name="turn", limit=1000),
        lambda got: len(got) >= len(events),
    )
    by_span = {s["context"]["span_id"]: s for s in turns}
    assert set(by_span) == {e.span_id for e in events}
    for event in events:
        attributes = by_span[event.span_id]["attributes"]
        assert by_span[event.span_id]["context"]["trace_id"] == event.trace_id
        assert attributes["session.id"] == f"{info.run_id}:book-summary:r0:{event.session}"
        assert attributes["memeval.turn"] == event.turn

    # the memory file after the last turn, as the run saved it, is intact on its update span
    last = events[-1]
    updates = poll(
        lambda: client.spans.get_spans(
            project_identifier=project, name="memory.update", trace_ids=[last.trace_id]
        ),
        lambda got: len(got) == 1,
    )
    snapshot = (ran.run_dir / last.snapshot).read_text("utf-8")
    assert updates[0]["attributes"]["memeval.memory.file_after"] == snapshot

    sessions = client.sessions.list(project_name=project)
    assert {s["session_id"] for s in sessions} == {
        f"{info.run_id}:book-summary:r0:{e.session}" for e in events
    }

    # the run graded its questions and sent the grades to the question spans
    question = next(e for e in events if e.question)
    grades = poll(
        lambda: client.spans.get_span_annotations(
            span_ids=[question.span_id], project_identifier=project
        ),
        lambda got: any(a["name"] == "question" for a in got),
    )
    names = {a["name"]: a for a in grades}
    assert "question" in names and "question.check" in names
    assert names["question.check"]["annotator_kind"] == "CODE"
    assert names["question"]["result"]["label"] in {"pass", "fail", "error"}
