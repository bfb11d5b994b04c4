"""Scripted and function models: canned answers in order, recorded requests, loud exhaustion."""

from __future__ import annotations

import json

import pytest

from memeval.models.base import ChatResponse, ModelError, ToolCall
from memeval.models.scripted import FunctionModel, ScriptedModel, ScriptExhausted

USER = [{"role": "user", "content": "hi"}]


async def test_steps_in_order_and_requests_recorded() -> None:
    call = ChatResponse(content=None, tool_calls=[ToolCall("c1", "t", {"a": 1})])
    model = ScriptedModel(["text", {"verdict": "allow"}, call], name="script")
    assert (await model.chat(USER)).content == "text"
    second = await model.chat(USER, schema={"type": "object"}, max_tokens=5)
    assert json.loads(second.content or "") == {"verdict": "allow"}
    third = await model.chat(USER, tools=[{"type": "function", "function": {"name": "t"}}])
    assert third.tool_calls[0].arguments == {"a": 1} and third.model == "script"
    assert model.calls == 3 and model.remaining == 0
    assert model.requests[1].schema == {"type": "object"} and model.requests[1].max_tokens == 5
    assert model.requests[2].tools is not None and model.requests[0].last_user == "hi"


async def test_exceptions_and_callables() -> None:
    seen: list[object] = []

    def step(messages: object, tools: object, schema: object) -> str:
        seen.append(schema)
        return "computed"

    async def async_step(messages: object, tools: object, schema: object) -> dict[str, int]:
        return {"n": 1}

    model = ScriptedModel([TimeoutError("slow"), step, async_step])
    with pytest.raises(TimeoutError):
        await model.chat(USER)
    assert (await model.chat(USER, schema={"x": 1})).content == "computed"
    assert seen == [{"x": 1}]
    assert (await model.chat(USER)).content == '{"n": 1}'


async def test_running_out_raises_with_context() -> None:
    model = ScriptedModel(["only one"])
    await model.chat(USER)
    with pytest.raises(ScriptExhausted, match=r"1 step\(s\) but call #2.*'hi'"):
        await model.chat(USER)


async def test_unconvertible_step_is_an_error() -> None:
    with pytest.raises(ModelError, match="cannot turn a int"):
        await ScriptedModel([42]).chat(USER)


async def test_function_model_sees_every_request() -> None:
    model = FunctionModel(lambda messages, tools, schema: f"echo {messages[-1]['content']}")
    assert (await model.chat(USER)).content == "echo hi"
    assert (await model.chat([{"role": "user", "content": "again"}])).content == "echo again"
    assert model.calls == 2 and model.name == "function"
