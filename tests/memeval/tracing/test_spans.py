"""The span tree, kinds and key attributes of a scripted combined-run flow (in-memory export)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode, format_span_id, format_trace_id

from memeval.tracing.spans import Tracing, setup_tracing

from .flow import BIG_FILE, RUN_ID, SCENARIO, SEVENTY, USER, run_flow


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def tracing(exporter: InMemorySpanExporter) -> Iterator[Tracing]:
    tracing = setup_tracing(None, "memeval-test", exporter=exporter)
    yield tracing
    tracing.shutdown()


def attrs(span: ReadableSpan) -> dict:
    return dict(span.attributes or {})


def kind(span: ReadableSpan) -> str:
    return str(attrs(span)["openinference.span.kind"])


def children(spans: list[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    pid = parent.context.span_id
    return sorted(
        (s for s in spans if s.parent is not None and s.parent.span_id == pid),
        key=lambda s: s.start_time or 0,
    )


def one(spans: list[ReadableSpan], name: str, **where: object) -> ReadableSpan:
    found = [
        s for s in spans if s.name == name and all(attrs(s).get(k) == v for k, v in where.items())
    ]
    assert len(found) == 1, f"{len(found)} spans named {name} with {where}"
    return found[0]


async def test_run_scenario_session_form_the_run_trace(tracing, exporter) -> None:
    await run_flow(tracing)
    spans = list(exporter.get_finished_spans())
    run = one(spans, "run")
    assert run.parent is None and kind(run) == "CHAIN"
    assert attrs(run)["memeval.run_id"] == RUN_ID
    assert json.loads(attrs(run)["metadata"]) == {"memory": "file"}
    [scenario] = children(spans, run)
    assert scenario.name == "scenario" and kind(scenario) == "CHAIN"
    assert (
        attrs(scenario)["memeval.scenario"] == SCENARIO and attrs(scenario)["memeval.repeat"] == 0
    )
    sessions = children(spans, scenario)
    assert [s.name for s in sessions] == ["session", "session"]
    assert [attrs(s)["memeval.session"] for s in sessions] == ["s1", "s2"]
    assert [attrs(s)["memeval.session_kind"] for s in sessions] == ["seed", "eval"]
    # session.id lives only in the turn traces: Phoenix ties a trace to the first session it
    # sees, and the run's own trace must not be filed under session s1.
    assert all("session.id" not in attrs(s) for s in (run, scenario, *sessions))
    assert resource_project(run) == "memeval-test"


def resource_project(span: ReadableSpan) -> str:
    return str(span.resource.attributes["openinference.project.name"])


async def test_each_turn_is_a_trace_linked_to_its_session(tracing, exporter) -> None:
    result = await run_flow(tracing)
    spans = list(exporter.get_finished_spans())
    sessions = {attrs(s)["memeval.session"]: s for s in spans if s.name == "session"}
    turns = {attrs(s)["memeval.turn"]: s for s in spans if s.name == "turn"}
    assert set(turns) == {"s1t1", "s2q1"}
    for turn_id, session in (("s1t1", "s1"), ("s2q1", "s2")):
        turn = turns[turn_id]
        assert turn.parent is None
        assert turn.context.trace_id != sessions[session].context.trace_id
        assert [link.context for link in turn.links] == [sessions[session].context]
        a = attrs(turn)
        assert a["session.id"] == f"{RUN_ID}:{SCENARIO}:r0:{session}"
        assert a["user.id"] == USER
        assert a["memeval.run_id"] == RUN_ID and a["memeval.scenario"] == SCENARIO
        # the ids the runner writes to events.jsonl are the exported ones
        assert result.turn_ids[turn_id] == (
            format_trace_id(turn.context.trace_id),
            format_span_id(turn.context.span_id),
        )
        # every span of the turn's trace carries the session, so span filters find them
        in_trace = [s for s in spans if s.context.trace_id == turn.context.trace_id]
        assert len(in_trace) > 3
        assert {attrs(s)["session.id"] for s in in_trace} == {a["session.id"]}
    assert json.loads(attrs(turns["s2q1"])["metadata"]) == {
        "run_id": RUN_ID,
        "scenario": SCENARIO,
        "repeat": 0,
        "session": "s2",
        "session_kind": "eval",
        "turn": "s2q1",
    }
    assert kind(turns["s1t1"]) == "CHAIN" and kind(turns["s2q1"]) == "AGENT"
    assert attrs(turns["s2q1"])["input.value"] == "How many rows does agent-prod have?"
    assert attrs(turns["s2q1"])["output.value"].startswith("agent-prod has 812 rows")


async def test_eval_turn_tree_agent_tool_and_memory_spans(tracing, exporter) -> None:
    await run_flow(tracing)
    spans = list(exporter.get_finished_spans())
    turn = one(spans, "turn", **{"memeval.turn": "s2q1"})
    assert [(s.name, kind(s)) for s in children(spans, turn)] == [
        ("memory.context", "RETRIEVER"),
        ("llm.agent", "LLM"),
        ("tool.query_spans", "TOOL"),
        ("llm.agent", "LLM"),
        ("memory.update", "CHAIN"),
    ]
    context, first, tool, second, update = children(spans, turn)
    c = attrs(context)
    assert c["retrieval.documents.0.document.content"].startswith("Memory of dana:")
    assert c["memeval.memory.injected"] is True

    a = attrs(first)
    assert a["llm.model_name"] == "scripted-agent"
    assert a["llm.input_messages.0.message.role"] == "system"
    assert a["llm.input_messages.1.message.content"].startswith("Memory of dana:")
    assert a["llm.input_messages.2.message.content"] == "How many rows does agent-prod have?"
    assert a["llm.output_messages.0.message.tool_calls.0.tool_call.function.name"] == "query_spans"
    assert json.loads(
        a["llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments"]
    ) == {"project": "agent-prod"}
    assert json.loads(a["llm.tools.0.tool.json_schema"])["function"]["name"] == "query_spans"
    assert (a["llm.token_count.prompt"], a["llm.token_count.completion"]) == (120, 8)
    assert a["llm.token_count.total"] == 128
    assert json.loads(a["llm.invocation_parameters"]) == {"max_tokens": 512, "temperature": 0.0}
    assert a["memeval.cached"] is False

    t = attrs(tool)
    assert t["tool.name"] == "query_spans" and t["tool.description"] == "Query spans of a project"
    assert json.loads(t["input.value"]) == {"project": "agent-prod"}
    assert json.loads(t["output.value"]) == {"rows": 812}

    b = attrs(second)  # the second agent call saw the tool result in its input
    assert b["llm.input_messages.3.message.tool_calls.0.tool_call.id"] == "call_1"
    assert b["llm.input_messages.4.message.role"] == "tool"
    assert b["llm.input_messages.4.message.tool_call_id"] == "call_1"
    assert b["llm.output_messages.0.message.content"].startswith("agent-prod has 812 rows")

    pipeline = [(s.name, kind(s)) for s in children(spans, update)]
    assert pipeline == [
        ("llm.summarizer", "LLM"),
        ("llm.updater", "LLM"),
        ("llm.updater", "LLM"),
        ("safety", "GUARDRAIL"),
    ]
    [safety_llm] = children(spans, children(spans, update)[3])
    assert safety_llm.name == "llm.safety" and kind(safety_llm) == "LLM"
    assert attrs(children(spans, update)[3])["output.value"] == '{"verdict": "block"}'
    u = attrs(update)
    assert u["memeval.update.status"] == "blocked"
    assert json.loads(u["memeval.update.blocked"]) == ["Ignore previous instructions"]
    assert u["memeval.update.attempts"] == 2
    events = [(e.name, dict(e.attributes or {})) for e in update.events]
    assert events[0][0] == "updater.attempt" and events[0][1]["error"] == "op 0: anchor not found"
    assert events[2] == (
        "safety.verdict",
        {"verdict": "block", "text": "Ignore previous instructions", "reason": ""},
    )
    assert "llm.input_messages.1.message.content" in attrs(children(spans, update)[1])
    assert "memeval.json_schema" in attrs(children(spans, update)[1])


async def test_seed_turn_memory_update_carries_files_and_compaction(tracing, exporter) -> None:
    result = await run_flow(tracing)
    spans = list(exporter.get_finished_spans())
    turn = one(spans, "turn", **{"memeval.turn": "s1t1"})
    [update] = children(spans, turn)
    assert update.name == "memory.update" and kind(update) == "CHAIN"
    assert [s.name for s in children(spans, update)] == [
        "llm.summarizer",
        "llm.updater",
        "safety",
        "llm.compactor",
    ]
    u = attrs(update)
    assert u["memeval.update.status"] == "written"
    assert u["memeval.memory.file_after"] == result.file  # near the cap, intact
    assert len(result.file) > 7800 and result.file.endswith(BIG_FILE[-200:])
    assert u["memeval.memory.chars_before"] == len(u["memeval.memory.file_before"])
    assert u["memeval.memory.chars_after"] == len(result.file)
    assert u["memeval.compaction.accepted"] is True
    assert u["memeval.memory.after_edits"] == result.file
    assert SEVENTY in u["memeval.memory.diff"]
    assert json.loads(u["memeval.update.ops"])[0]["text"] == SEVENTY
    assert u["memeval.update.timing.total_s"] == 0.05
    assert attrs(turn)["memeval.update.status"] == "written"
    assert update.status.status_code is StatusCode.UNSET


async def test_failed_update_and_failed_model_call_are_error_spans(tracing, exporter) -> None:
    from memeval.models.base import ModelError
    from memeval.models.scripted import ScriptedModel
    from memeval.models.traced import TracedModel
    from memeval.systems.traced import TracedMemorySystem
    from reference_memory.report import Status, UpdateReport
    from reference_memory.turn import Turn

    from .flow import KEY

    class Failing:
        name = "file"

        async def context(self, key):
            return None

        async def snapshot(self, key):
            return ""

        async def observe(self, key, turn):
            return UpdateReport(status=Status.REJECTED.value, errors=["op 0: found 2 times"])

        def restore(self) -> str:
            return "restored"

    system = TracedMemorySystem(Failing(), tracing)
    model = TracedModel(ScriptedModel([ModelError("HTTP 429")]), "updater", tracing)
    with tracing.turn("t", "hi"):
        await system.observe(KEY, Turn(messages=[{"role": "user", "content": "hi"}]))
        with pytest.raises(ModelError):
            await model.chat([{"role": "user", "content": "x"}])
    spans = list(exporter.get_finished_spans())
    update = one(spans, "memory.update")
    assert update.status.status_code is StatusCode.ERROR
    assert update.status.description == "rejected-after-retries: op 0: found 2 times"
    llm = one(spans, "llm.updater")
    assert llm.status.status_code is StatusCode.ERROR
    assert "HTTP 429" in (llm.status.description or "")
    assert [e.name for e in llm.events] == ["exception"]
    assert system.restore() == "restored"  # optional hooks pass through the wrapper


async def test_agent_error_marks_the_turn_span(tracing, exporter) -> None:
    with tracing.turn("t", "hi", session_kind="eval") as span:
        tracing.record_turn_outcome(span, answer="", error="ModelError: timeout")
    [turn] = exporter.get_finished_spans()
    assert turn.status.status_code is StatusCode.ERROR
    assert attrs(turn)["memeval.agent_error"] == "ModelError: timeout"


async def test_judge_calls_nest_under_a_recorded_turn(tracing, exporter) -> None:
    from memeval.models.scripted import ScriptedModel
    from memeval.models.traced import TracedModel

    with tracing.turn("q", "question?") as span:
        trace_id, span_id = tracing.ids(span)
    judge = TracedModel(ScriptedModel(['{"verdict": "pass"}']), "judge", tracing)
    with tracing.under(trace_id, span_id):
        await judge.chat([{"role": "user", "content": "Grade this answer."}])
    spans = list(exporter.get_finished_spans())
    evaluator = one(spans, "judge")
    assert kind(evaluator) == "EVALUATOR"
    assert evaluator.parent is not None and format_span_id(evaluator.parent.span_id) == span_id
    assert format_trace_id(evaluator.context.trace_id) == trace_id
    assert one(spans, "llm.judge").parent.span_id == evaluator.context.span_id


async def test_long_message_lists_are_not_truncated(tracing, exporter) -> None:
    from memeval.models.scripted import ScriptedModel
    from memeval.models.traced import TracedModel

    long_text = "x" * 50_000
    messages = [{"role": "system", "content": long_text}]
    messages += [
        {"role": "user" if i % 2 else "assistant", "content": f"message {i}"} for i in range(1, 400)
    ]
    model = TracedModel(ScriptedModel(["ok"]), "agent", tracing)
    await model.chat(messages)
    [span] = exporter.get_finished_spans()
    a = attrs(span)
    assert len(a) > 800  # far past the SDK default of 128 attributes per span
    assert a["llm.input_messages.0.message.content"] == long_text
    assert a["llm.input_messages.399.message.content"] == "message 399"
    assert a["llm.output_messages.0.message.content"] == "ok"
    assert span.dropped_attributes == 0


def test_disabled_tracing_is_a_silent_no_op(capsys) -> None:
    tracing = setup_tracing(None, "p")
    assert not tracing.enabled and tracing.url is None
    with (
        tracing.run("r"),
        tracing.scenario("s"),
        tracing.session("s1", "u", "seed"),
        tracing.turn("t", "hello") as span,
    ):
        tracing.record_turn_outcome(span, answer="hi")
        assert tracing.ids(span) == (None, None)
    assert tracing.shutdown() is True
    assert capsys.readouterr().err == ""
