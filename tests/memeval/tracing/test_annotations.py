"""Grades become span annotations on the turn span the run recorded; sending is best effort."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from memeval.rundir.record import RunInfo, TurnRecord, append_event, write_run
from memeval.rundir.results import HumanGrade, JudgeResult, RunResults, TurnVerdicts, Verdict
from memeval.rundir.saved import SavedRun
from memeval.tracing.annotations import annotate_run, annotations_from_results, log_annotations

from .test_unreachable import free_port


def record(turn: str, span_id: str | None, kind: str = "eval") -> TurnRecord:
    return TurnRecord(
        scenario="book",
        index=0,
        session="s2",
        session_index=1,
        session_kind=kind,  # type: ignore[arg-type]
        source="book",
        turn=turn,
        user_message="?",
        trace_id="ab" * 16 if span_id else None,
        span_id=span_id,
    )


def results() -> RunResults:
    graded = TurnVerdicts(
        scenario="book",
        index=3,
        turn="s2q1",
        session="s2",
        kind="eval",
        question_type="memory-dependent",
        question_check=Verdict(verdict="pass", source="check", reason="answer matched 0.648"),
        judge=JudgeResult(verdict="fail", reason="ran a new experiment", model="judge-model"),
        human=HumanGrade(verdict="pass", note="the experiment was harmless", grader="ana"),
        question=Verdict(verdict="pass", source="human", reason="the experiment was harmless"),
        final=Verdict(verdict="pass", source="human"),
    )
    seed = TurnVerdicts(
        scenario="book",
        index=0,
        turn="s1t1",
        session="s1",
        kind="seed",
        write_check=Verdict(verdict="fail", source="check", reason="seventy-rows missing"),
        write=Verdict(verdict="fail", source="check", reason="seventy-rows missing"),
    )
    untraced = TurnVerdicts(
        scenario="book", index=1, turn="s1t2", session="s1", kind="seed",
        write=Verdict(verdict="pass"),
    )  # fmt: skip
    return RunResults(run_id="r1", turns=[graded, seed, untraced])


def test_each_verdict_layer_keeps_its_source() -> None:
    events = [record("s2q1", "1" * 16), record("s1t1", "2" * 16, "seed"), record("s1t2", None)]
    got = {(a.span_id, a.name): a for a in annotations_from_results(results(), events)}
    assert set(got) == {
        ("1" * 16, "question.check"),
        ("1" * 16, "question.judge"),
        ("1" * 16, "question.human"),
        ("1" * 16, "question"),
        ("2" * 16, "write.check"),
        ("2" * 16, "write"),
    }  # s1t2 had no span (tracing off then): nothing to annotate
    assert got["1" * 16, "question.check"].annotator_kind == "CODE"
    judge = got["1" * 16, "question.judge"]
    assert (judge.annotator_kind, judge.label, judge.score) == ("LLM", "fail", 0.0)
    human = got["1" * 16, "question"]
    assert (human.annotator_kind, human.label, human.score) == ("HUMAN", "pass", 1.0)
    assert human.payload()["result"]["explanation"] == "the experiment was harmless"
    assert human.metadata == {
        "run_id": "r1",
        "scenario": "book",
        "repeat": 0,
        "turn": "s2q1",
        "source": "human",
        "question_type": "memory-dependent",
    }
    write = got["2" * 16, "write"].payload()
    assert write["annotator_kind"] == "CODE" and write["result"]["label"] == "fail"


class _Recorder(BaseHTTPRequestHandler):
    bodies: ClassVar[list[Any]] = []

    def do_GET(self) -> None:  # the health check
        self._reply(200, b"OK")

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        type(self).bodies.append((self.path, json.loads(self.rfile.read(length))))
        self._reply(200, b"{}")

    def _reply(self, code: int, body: bytes) -> None:
        self.send_response(code)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[str]:
    _Recorder.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_log_annotations_posts_the_payload_phoenix_client_would(recorder: str) -> None:
    # The body below is what phoenix.client.spans.log_span_annotations sent for these grades.
    annotations = annotations_from_results(results(), [record("s2q1", "1" * 16)])
    assert log_annotations(recorder, "memeval-r1", annotations) == 4
    [(path, body)] = _Recorder.bodies
    assert path == "/v1/span_annotations"
    assert [a["name"] for a in body["data"]] == [
        "question.check",
        "question.judge",
        "question.human",
        "question",
    ]
    assert body["data"][0] == {
        "span_id": "1" * 16,
        "name": "question.check",
        "annotator_kind": "CODE",
        "result": {"label": "pass", "score": 1.0, "explanation": "answer matched 0.648"},
        "metadata": {
            "run_id": "r1",
            "scenario": "book",
            "repeat": 0,
            "turn": "s2q1",
            "source": "check",
            "question_type": "memory-dependent",
        },
    }


def test_unreachable_phoenix_costs_one_warning(capsys: pytest.CaptureFixture[str]) -> None:
    annotations = annotations_from_results(results(), [record("s2q1", "1" * 16)])
    started = time.perf_counter()
    sent = log_annotations(f"http://127.0.0.1:{free_port()}", "memeval-r1", annotations)
    assert sent == 0 and time.perf_counter() - started < 2.0
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: grades were not sent to Phoenix")


def test_nothing_to_send_sends_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert log_annotations(None, "p", []) == 0
    assert log_annotations("http://127.0.0.1:9", "p", []) == 0
    assert capsys.readouterr().err == ""


def traced_run_dir(root: Path, phoenix: dict[str, Any] | None) -> Path:
    root.mkdir()
    info = RunInfo(run_id="r1", created_at="2026-01-01T00:00:00Z", memory="file", phoenix=phoenix)
    write_run(root, info)
    append_event(root, record("s2q1", "1" * 16))
    return root


def test_annotate_run_sends_to_the_phoenix_in_run_json(recorder: str, tmp_path: Path) -> None:
    run_dir = traced_run_dir(tmp_path / "run", {"url": recorder, "project": "memeval-r1"})
    assert annotate_run(SavedRun.open(run_dir), results()) == 4
    [(_, body)] = _Recorder.bodies
    assert {a["span_id"] for a in body["data"]} == {"1" * 16}


def test_annotate_run_of_an_untraced_run_sends_nothing(tmp_path: Path, capsys) -> None:
    assert annotate_run(SavedRun.open(traced_run_dir(tmp_path / "run", None)), results()) == 0
    assert capsys.readouterr().err == ""
