"""The runner against scripted models: sessions, history, memory injection, tools, systems."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memeval.models.base import ChatResponse, ToolCall
from memeval.models.scripted import FunctionModel
from memeval.rundir.record import read_events, read_run
from memeval.runner import RunOptions, execute

MINI = Path(__file__).with_name("mini.yaml")
ORACLE_LINE = "- [user] Datasets have exactly 70 rows."


def agent_fn(messages: list[dict[str, Any]], tools: Any, schema: Any) -> ChatResponse:
    """Calls query_spans once on the first eval question, then answers from what it saw."""
    last_user = next(m for m in reversed(messages) if m["role"] == "user")["content"]
    called = any(m["role"] == "tool" for m in messages[messages.index(_last(messages)) :])
    if "spans" in last_user and tools and not called:
        return ChatResponse(
            content=None,
            tool_calls=[ToolCall(id="c1", name="query_spans", arguments={"project": "agent-prod"})],
        )
    if "spans" in last_user:
        tool = json.loads(next(m for m in reversed(messages) if m["role"] == "tool")["content"])
        rows = "70" if any("70 rows" in str(m["content"]) for m in messages) else "unknown"
        return ChatResponse(content=f"agent-prod has {tool['rows']} spans; dataset size {rows}.")
    return ChatResponse(content="You asked about agent-prod spans.")


def _last(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return next(m for m in reversed(messages) if m["role"] == "user")


def pipeline_fn(messages: list[dict[str, Any]], tools: Any, schema: Any) -> Any:
    """Summarizer echoes; updater stores the 70-row convention once; safety allows."""
    text = "\n".join(str(m.get("content") or "") for m in messages)
    if schema is None:
        return "The user said datasets have 70 rows." if "70 rows" in text else "Small talk."
    props = schema.get("properties", {})
    if "verdict" in props:
        return {"verdict": "allow", "reason": "a plain fact"}
    if "ops" in props:
        last = messages[-1]["content"]
        if "70 rows" in last and ORACLE_LINE not in text:
            return {"ops": [{"op": "add", "anchor": "## Conventions", "text": ORACLE_LINE}]}
        return {"ops": []}
    raise AssertionError(f"unexpected schema {schema}")


def options(tmp_path: Path, memory: str, **extra: Any) -> tuple[RunOptions, FunctionModel]:
    agent = FunctionModel(agent_fn, name="scripted-agent")
    pipeline = FunctionModel(pipeline_fn, name="scripted-pipeline")
    chat = {"agent": agent, "judge": FunctionModel(_no_judge, name="no-judge")}
    for role in ("summarizer", "updater", "safety", "compactor"):
        chat[role] = pipeline
    opts = RunOptions(
        targets=[str(MINI)],
        memory=memory,
        out=tmp_path,
        cache=False,
        progress=False,
        chat_models=chat,
        **extra,
    )
    return opts, agent


def _no_judge(*_: Any) -> Any:
    raise AssertionError("the runner never judges")


async def test_history_resets_between_sessions_and_memory_is_never_stored(tmp_path: Path) -> None:
    opts, agent = options(tmp_path, "oracle")
    outcome = await execute(opts)
    events = read_events(outcome.run_dir)
    assert [e.turn for e in events] == ["s1t1", "s2t1", "s3q1", "s3q2"]
    # seed turns replay their transcript: no agent call; eval turns: 2 calls then 1
    assert len(agent.requests) == 3
    for request in agent.requests:
        sent = json.dumps(request.messages)
        assert "PELICAN" not in sent  # said only in session 1: history reset
        systems = [m for m in request.messages if m["role"] == "system"]
        assert len(systems) == 2 and ORACLE_LINE in systems[1]["content"]
    second_question = agent.requests[2].messages
    # the first eval turn is in the history (user, tool call, tool result, answer) ...
    assert any(m.get("content") == events[2].user_message for m in second_question)
    # ... but the memory message appears once, never stored into history or the journal
    assert json.dumps(second_question).count("Datasets have exactly 70 rows") == 1
    for event in events:
        assert ORACLE_LINE not in json.dumps(event.messages)
    assert events[2].memory_context and ORACLE_LINE in events[2].memory_context


async def test_fixture_tools_answer_as_written(tmp_path: Path) -> None:
    opts, _ = options(tmp_path, "none")
    events = read_events((await execute(opts)).run_dir)
    q1 = events[2]
    assert [c.name for c in q1.tool_calls] == ["query_spans"]
    assert q1.tool_calls[0].result == {"rows": 812, "note": "live count"}
    assert q1.answer == "agent-prod has 812 spans; dataset size unknown."


async def test_none_injects_nothing(tmp_path: Path) -> None:
    opts, agent = options(tmp_path, "none")
    events = read_events((await execute(opts)).run_dir)
    assert all(e.memory_context is None for e in events)
    assert all(sum(m["role"] == "system" for m in r.messages) == 1 for r in agent.requests)
    assert all(e.file_chars == 0 for e in events)


async def test_full_history_injects_earlier_sessions_only(tmp_path: Path) -> None:
    opts, _ = options(tmp_path, "full-history")
    events = read_events((await execute(opts)).run_dir)
    context = events[2].memory_context or ""
    assert "PELICAN" in context and "Thanks!" in context  # sessions 1 and 2
    assert events[2].user_message not in context  # not the current session
    assert events[3].memory_context == context  # the current session stays out
    assert "dataset size 70" in (events[2].answer or "")


async def test_oracle_serves_reference_memory_and_writes_nothing(tmp_path: Path) -> None:
    opts, _ = options(tmp_path, "oracle")
    run_dir = (await execute(opts)).run_dir
    events = read_events(run_dir)
    assert "dataset size 70" in (events[2].answer or "")
    assert all(e.update.status == "unchanged" for e in events)
    snapshot = (run_dir / events[2].snapshot).read_text()
    assert ORACLE_LINE in snapshot


async def test_file_memory_learns_and_snapshots_every_turn(tmp_path: Path) -> None:
    opts, _ = options(tmp_path, "file")
    outcome = await execute(opts)
    run_dir = outcome.run_dir
    events = read_events(run_dir)
    assert [e.update.status for e in events][:2] == ["written", "unchanged"]
    for event in events:
        path = run_dir / event.snapshot
        assert path.is_file() and len(path.read_text()) == event.file_chars
    assert ORACLE_LINE in (run_dir / events[0].snapshot).read_text()
    # the memory written in session 1 reaches the agent in session 3
    assert "dataset size 70" in (events[2].answer or "")
    roles = {c.role for e in events for c in e.calls}
    assert {"summarizer", "updater", "safety", "agent"} <= roles
    info = read_run(run_dir)
    assert info.status == "complete" and info.strategies == {
        "updater": "ops",
        "safety": "classifier",
        "compactor": "rewrite",
    }
    assert info.models["agent"] == "scripted-agent"
    assert any(path.endswith("mini.yaml") for path in info.scenario_hashes)
    assert any("updater" in path for path in info.prompt_hashes)


async def test_repeats_run_concurrently_with_their_own_stores(tmp_path: Path) -> None:
    opts, _ = options(tmp_path, "file", repeat=3, concurrency=3)
    run_dir = (await execute(opts)).run_dir
    events = read_events(run_dir)
    assert sorted({e.repeat for e in events}) == [0, 1, 2]
    for k in range(3):
        mine = sorted((e for e in events if e.repeat == k), key=lambda e: e.index)
        assert [e.update.status for e in mine][:2] == ["written", "unchanged"]
        assert (run_dir / "stores" / f"mini-r{k}" / "memory.sqlite").is_file()


async def test_agent_failure_is_recorded_not_raised(tmp_path: Path) -> None:
    opts, _ = options(tmp_path, "file")

    def broken(*_: Any) -> Any:
        raise TimeoutError("the endpoint timed out")

    opts.chat_models["agent"] = FunctionModel(broken, name="broken")
    events = read_events((await execute(opts)).run_dir)
    assert events[2].agent_error and "timed out" in events[2].agent_error
    assert events[2].update.status == "skipped-incomplete-turn"  # nothing learned
    assert events[3].agent_error and len(events) == 4  # the run went on


async def test_unknown_memory_system_is_a_config_error(tmp_path: Path) -> None:
    from memeval.errors import ConfigError

    opts, _ = options(tmp_path, "vector-db")
    with pytest.raises(ConfigError, match=r"unknown memory system 'vector-db'.*full-history"):
        await execute(opts)
