"""The openai back end against a real local HTTP server speaking the Chat Completions API."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import pytest

from memeval.errors import ConfigError
from memeval.models.base import ModelError
from memeval.models.guard import ModelRequestsForbidden
from memeval.models.openai import OpenAIModel
from tests.memeval.models.fake_openai import FakeOpenAIServer, Reply, completion, error

SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["allow", "block"]}},
    "required": ["verdict"],
    "additionalProperties": False,
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "query_spans",
            "description": "Query spans of a project",
            "parameters": {"type": "object", "properties": {"project": {"type": "string"}}},
        },
    }
]
MESSAGES = [{"role": "user", "content": "hello"}]
PROBE_OK = completion('{"ok": true}')  # the answer to the one response-format probe
# the answer to the one tools probe from a server that calls tools natively
TOOLS_OK = completion(None, tool_calls=[{"name": "current_time", "arguments": '{"zone": "UTC"}'}])


@pytest.fixture
def server(allow_model_requests: None) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


def model(server: FakeOpenAIServer, **kwargs: object) -> OpenAIModel:
    settings: dict[str, object] = {"backoff_s": 0.01, "timeout_s": 5.0, **kwargs}
    return OpenAIModel("gpt-4o-mini", api_key="sk-test", base_url=server.base_url, **settings)  # type: ignore[arg-type]


async def test_plain_answer_with_usage_and_key(server: FakeOpenAIServer) -> None:
    server.script(completion("Paris", prompt_tokens=20, completion_tokens=3))
    response = await model(server).chat(MESSAGES, max_tokens=50, temperature=0.0)
    assert response.content == "Paris"
    assert (response.prompt_tokens, response.completion_tokens) == (20, 3)
    assert response.model == "openai:gpt-4o-mini" and response.latency_s > 0
    sent = server.requests[0]
    assert sent["model"] == "gpt-4o-mini" and sent["messages"] == MESSAGES
    assert sent["max_tokens"] == 50 and sent["temperature"] == 0.0
    assert server.headers[0]["authorization"] == "Bearer sk-test"


async def test_tool_calls_are_sent_and_parsed(server: FakeOpenAIServer) -> None:
    server.script(
        TOOLS_OK,
        completion(None, tool_calls=[{"name": "query_spans", "arguments": '{"project": "p1"}'}]),
    )
    chat_model = model(server)
    response = await chat_model.chat(MESSAGES, tools=TOOLS)
    assert response.content is None
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("call_0", "query_spans", {"project": "p1"})
    ]
    assert server.requests[0]["tools"][0]["function"]["name"] == "current_time"  # the probe
    assert server.requests[1]["tools"] == TOOLS
    assert chat_model.capabilities()["tools"] == "native"


async def test_a_required_call_is_sent_as_tool_choice_and_dropped_if_rejected(
    server: FakeOpenAIServer,
) -> None:
    call = completion(None, tool_calls=[{"name": "query_spans", "arguments": '{"project": "p"}'}])
    server.script(TOOLS_OK, call)
    chat_model = model(server)
    response = await chat_model.chat(MESSAGES, tools=TOOLS, tool_choice="required")
    assert [c.name for c in response.tool_calls] == ["query_spans"]
    assert server.requests[1]["tool_choice"] == "required"
    server.script(completion("free"))
    await chat_model.chat(MESSAGES, tools=TOOLS)  # "auto" is the server's own default
    assert "tool_choice" not in server.requests[2]
    # a server that rejects the parameter: asked again without it, and never sent it again
    server.script(error(400, "tool_choice 'required' is not supported"), call, call)
    await chat_model.chat(MESSAGES, tools=TOOLS, tool_choice="required")
    await chat_model.chat(MESSAGES, tools=TOOLS, tool_choice="required")
    assert ["tool_choice" in r for r in server.requests[3:]] == [True, False, False]
    assert chat_model.capabilities()["tools"] == "native"  # a rejected choice keeps tools


async def test_a_required_call_in_prompt_tools_mode_offers_no_answer(
    server: FakeOpenAIServer,
) -> None:
    server.script(
        error(500, "tools are not supported by this model"),
        completion('{"name": "query_spans", "arguments": {"project": "p1"}}'),
    )
    response = await model(server).chat(MESSAGES, tools=TOOLS, tool_choice="required")
    assert [c.name for c in response.tool_calls] == ["query_spans"]
    instruction = server.requests[1]["messages"][-1]["content"]
    assert "query_spans" in instruction and '"answer"' not in instruction


async def test_no_call_allowed_is_sent_as_tool_choice_none_or_as_no_tools(
    server: FakeOpenAIServer,
) -> None:
    server.script(TOOLS_OK, completion("812 spans."))
    chat_model = model(server)
    response = await chat_model.chat(MESSAGES, tools=TOOLS, tool_choice="none")
    assert response.content == "812 spans." and not response.tool_calls
    assert server.requests[1]["tools"] == TOOLS and server.requests[1]["tool_choice"] == "none"
    # once the server has rejected tool_choice, "none" cannot be said: the tools go instead
    server.script(error(400, "tool_choice is not supported"), completion("ok"), completion("ok"))
    await chat_model.chat(MESSAGES, tools=TOOLS, tool_choice="required")
    await chat_model.chat(MESSAGES, tools=TOOLS, tool_choice="none")
    last = server.requests[-1]
    assert "tools" not in last and "tool_choice" not in last


async def test_no_call_allowed_in_prompt_tools_mode_describes_no_tools(
    server: FakeOpenAIServer,
) -> None:
    server.script(error(500, "tools are not supported by this model"), completion("Recorded: 9%."))
    response = await model(server).chat(MESSAGES, tools=TOOLS, tool_choice="none")
    assert response.content == "Recorded: 9%." and not response.tool_calls
    sent = json.dumps(server.requests[-1])
    assert "query_spans" not in sent and "tools" not in server.requests[-1]


async def test_json_schema_output(server: FakeOpenAIServer) -> None:
    server.script(PROBE_OK, completion('{"verdict": "block"}'), completion('{"verdict": "allow"}'))
    chat_model = model(server)
    response = await chat_model.chat(MESSAGES, schema=SCHEMA)
    assert json.loads(response.content or "") == {"verdict": "block"}
    probe, first = server.requests[:2]
    assert probe["response_format"]["type"] == "json_schema"  # the probe asks in the mode
    fmt = first["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["schema"] == SCHEMA and fmt["json_schema"]["strict"] is True
    await chat_model.chat(MESSAGES, schema=SCHEMA)  # probed once per model
    assert len(server.requests) == 3
    assert chat_model.capabilities()["json_mode"] == "json_schema"
    assert chat_model.capabilities()["probe_calls"] == 1


async def test_server_rejecting_json_schema_falls_back_to_json_object(
    server: FakeOpenAIServer,
) -> None:
    # llama.cpp's server answers OpenAI-style json_schema with a 400.
    rejection = error(400, "response_format type json_schema is not supported")
    server.script(rejection, rejection, PROBE_OK, completion('{"verdict": "allow"}'))
    chat_model = model(server)
    response = await chat_model.chat(MESSAGES, schema=SCHEMA)
    assert json.loads(response.content or "") == {"verdict": "allow"}
    final = server.requests[-1]
    assert final["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert "JSON schema" in final["messages"][-1]["content"]
    # The model remembers what the server accepts: the next call goes straight there.
    server.script(completion('{"verdict": "block"}'))
    await chat_model.chat(MESSAGES, schema=SCHEMA)
    assert len(server.requests) == 5
    assert server.requests[-1]["response_format"]["type"] == "json_object"


# llama-cpp-python's server: FastAPI validation of response_format, answered with HTTP 500
LLAMA_CPP_500 = Reply(
    status=500,
    body={
        "detail": [
            {
                "type": "literal_error",
                "loc": ["body", "response_format", "type"],
                "msg": "Input should be 'text' or 'json_object'",
            }
        ]
    },
)


async def test_a_500_naming_response_format_steps_down_and_is_never_retried(
    server: FakeOpenAIServer,
) -> None:
    server.script(LLAMA_CPP_500, LLAMA_CPP_500, PROBE_OK)
    server.script(*(completion('{"verdict": "allow"}') for _ in range(4)))
    chat_model = model(server)
    answers = await asyncio.gather(*(chat_model.chat(MESSAGES, schema=SCHEMA) for _ in range(4)))
    assert all(json.loads(a.content or "") == {"verdict": "allow"} for a in answers)
    # one probe (three requests: two rejected modes, one accepted), then the four calls
    assert len(server.requests) == 7
    kinds = [r["response_format"]["type"] for r in server.requests]
    assert kinds == ["json_schema", "json_schema", *["json_object"] * 5]
    assert chat_model.capabilities() == {
        "json_mode": "json_object+schema",
        "probe_calls": 3,
        "tools": None,  # never asked with tools: undecided
        "usage": "reported",
    }


async def test_a_rejection_during_a_call_steps_down_without_a_retry(
    server: FakeOpenAIServer,
) -> None:
    # the probe passed, yet the server rejects the format on a real call (another schema)
    server.script(PROBE_OK, LLAMA_CPP_500, completion('{"verdict": "allow"}'))
    chat_model = model(server, max_retries=0)  # a retry of the 500 would fail the call
    response = await chat_model.chat(MESSAGES, schema=SCHEMA)
    assert json.loads(response.content or "") == {"verdict": "allow"}
    assert server.requests[-1]["response_format"]["type"] == "json_schema"  # the loose mode
    assert "strict" in server.requests[-1]["response_format"]["json_schema"]


async def test_a_probe_that_meets_a_server_fault_leaves_the_calls_to_decide(
    server: FakeOpenAIServer,
) -> None:
    server.script(error(503, "overloaded"), completion('{"verdict": "allow"}'))
    chat_model = model(server)
    response = await chat_model.chat(MESSAGES, schema=SCHEMA)
    assert json.loads(response.content or "") == {"verdict": "allow"}
    assert chat_model.capabilities()["json_mode"] == "json_schema"  # the call settled it


async def test_a_server_without_tools_gets_them_in_the_prompt(server: FakeOpenAIServer) -> None:
    server.script(
        error(500, "tools are not supported by this model"),
        completion('{"name": "query_spans", "arguments": {"project": "p1"}}'),
        completion('{"answer": "p1 has 3 spans"}'),
    )
    chat_model = model(server)
    first = await chat_model.chat(MESSAGES, tools=TOOLS)  # the probe met the rejection
    assert [(c.name, c.arguments) for c in first.tool_calls] == [("query_spans", {"project": "p1"})]
    assert "tools" in server.requests[0] and "tools" not in server.requests[1]
    assert "query_spans" in server.requests[1]["messages"][-1]["content"]
    history = [
        *MESSAGES,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": first.tool_calls[0].id,
                    "type": "function",
                    "function": {"name": "query_spans", "arguments": '{"project": "p1"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": first.tool_calls[0].id, "name": "query_spans",
         "content": '{"spans": 3}'},
    ]  # fmt: skip
    second = await chat_model.chat(history, tools=TOOLS)
    assert second.content == "p1 has 3 spans" and not second.tool_calls
    sent = server.requests[2]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user", "system"]
    assert sent[2]["content"] == 'Result of query_spans: {"spans": 3}'
    assert chat_model.capabilities()["tools"] == "prompt"


async def test_a_server_that_ignores_tools_gets_them_in_the_prompt(
    server: FakeOpenAIServer,
) -> None:
    # llama-cpp-python's server with a chat format without function calling: 200, plain text
    server.script(completion("It is noon."), completion('{"answer": "hello there"}'))
    chat_model = model(server)
    response = await chat_model.chat(MESSAGES, tools=TOOLS)
    assert response.content == "hello there"
    assert "tools" not in server.requests[1]
    assert chat_model.capabilities()["tools"] == "prompt"
    # an agent's last round asks without tools over a history with calls in it: that server
    # still sees no tool-call message (it rejects them)
    server.script(completion("p1 has 3 spans"))
    call = {"id": "c1", "type": "function", "function": {"name": "query_spans", "arguments": "{}"}}
    history = [
        *MESSAGES,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "name": "query_spans", "content": "3"},
    ]
    await chat_model.chat(history)
    sent = server.requests[-1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert not any("tool_calls" in m for m in sent)


async def test_a_request_the_server_fails_to_validate_is_not_retried(
    server: FakeOpenAIServer,
) -> None:
    server.script(error(500, "35 validation errors: messages.3 ..."), completion("never"))
    with pytest.raises(ModelError, match="request rejected"):
        await model(server).chat(MESSAGES)
    assert len(server.requests) == 1


async def test_a_response_without_usage_gets_an_estimate(server: FakeOpenAIServer) -> None:
    reply = completion("x" * 40)
    reply.body.pop("usage")
    server.script(reply)
    chat_model = model(server)
    response = await chat_model.chat([{"role": "user", "content": "y" * 80}])
    assert (response.prompt_tokens, response.completion_tokens) == (20, 10)
    assert chat_model.capabilities()["usage"] == "estimated"


async def test_429_then_success_honours_retry_after(server: FakeOpenAIServer) -> None:
    server.script(error(429, "rate limited", {"retry-after": "0.2"}), completion("done"))
    started = time.perf_counter()
    response = await model(server).chat(MESSAGES)
    assert response.content == "done"
    assert len(server.requests) == 2
    assert time.perf_counter() - started >= 0.2


async def test_5xx_is_retried(server: FakeOpenAIServer) -> None:
    server.script(error(503, "overloaded"), error(500, "oops"), completion("fine"))
    assert (await model(server).chat(MESSAGES)).content == "fine"
    assert len(server.requests) == 3


async def test_timeout_then_success(server: FakeOpenAIServer) -> None:
    server.script(Reply(body=completion("late").body, delay_s=2.0), completion("on time"))
    response = await model(server, timeout_s=0.3).chat(MESSAGES)
    assert response.content == "on time"
    assert len(server.requests) == 2


async def test_persistent_timeouts_become_a_model_error(server: FakeOpenAIServer) -> None:
    slow = completion("late").body
    server.script(*(Reply(body=slow, delay_s=1.0) for _ in range(3)))
    with pytest.raises(ModelError, match="failed after 3 attempts"):
        await model(server, timeout_s=0.2, max_retries=2).chat(MESSAGES)


async def test_garbage_body_is_retried_then_fails_cleanly(server: FakeOpenAIServer) -> None:
    server.script(Reply(body="<html>502 bad gateway</html"), completion("recovered"))
    assert (await model(server).chat(MESSAGES)).content == "recovered"
    server.script(*(Reply(body="{not json") for _ in range(2)))
    with pytest.raises(ModelError, match="openai:gpt-4o-mini"):
        await model(server, max_retries=1).chat(MESSAGES)


async def test_garbage_json_answer_to_a_schema_is_retried(server: FakeOpenAIServer) -> None:
    server.script(PROBE_OK, completion("Sure! verdict: allow"), completion('{"verdict": "allow"}'))
    response = await model(server).chat(MESSAGES, schema=SCHEMA)
    assert json.loads(response.content or "") == {"verdict": "allow"}
    server.script(PROBE_OK, completion("still not json"), completion("nope"))
    with pytest.raises(ModelError, match="not JSON"):
        await model(server, max_retries=1).chat(MESSAGES, schema=SCHEMA)


async def test_truncated_json_is_not_retried(server: FakeOpenAIServer) -> None:
    server.script(PROBE_OK, completion('{"verdict": "al', finish_reason="length"), completion("{}"))
    with pytest.raises(ModelError, match="cut off at max_tokens"):
        await model(server).chat(MESSAGES, schema=SCHEMA, max_tokens=5)
    assert len(server.requests) == 2


async def test_garbage_tool_arguments_are_a_model_error(server: FakeOpenAIServer) -> None:
    bad = completion(None, tool_calls=[{"name": "query_spans", "arguments": "{project:"}])
    server.script(TOOLS_OK, bad, bad)
    with pytest.raises(ModelError, match="arguments are not JSON"):
        await model(server, max_retries=1).chat(MESSAGES, tools=TOOLS)


async def test_other_client_errors_are_not_retried(server: FakeOpenAIServer) -> None:
    server.script(error(401, "invalid api key"), completion("never"))
    with pytest.raises(ModelError, match="HTTP 401"):
        await model(server).chat(MESSAGES)
    assert len(server.requests) == 1


async def test_reasoning_model_parameters_are_adapted(server: FakeOpenAIServer) -> None:
    server.script(
        error(400, "Unsupported parameter: 'max_tokens'; use 'max_completion_tokens'"),
        error(400, "Unsupported value: 'temperature' does not support 0.0"),
        completion("ok"),
    )
    assert (await model(server).chat(MESSAGES, max_tokens=10)).content == "ok"
    final = server.requests[-1]
    assert final["max_completion_tokens"] == 10
    assert "max_tokens" not in final and "temperature" not in final


async def test_concurrency_limit_is_respected(server: FakeOpenAIServer) -> None:
    server.script(*(Reply(body=completion("x").body, delay_s=0.2) for _ in range(4)))
    chat_model = model(server, concurrency=2)
    started = time.perf_counter()
    await asyncio.gather(*(chat_model.chat(MESSAGES) for _ in range(4)))
    # four 0.2 s requests, two at a time: at least two rounds
    assert time.perf_counter() - started >= 0.4


def test_missing_key_is_a_one_line_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError) as info:
        OpenAIModel("gpt-4o-mini")
    message = str(info.value)
    assert "\n" not in message
    assert "OPENAI_API_KEY" in message and "OPENAI_BASE_URL" in message
    assert "--model local" in message


def test_base_url_alone_is_enough(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert OpenAIModel("llama").base_url == "http://127.0.0.1:9/v1"


async def test_requests_are_blocked_outside_allowed_tests() -> None:
    chat_model = OpenAIModel("gpt-4o-mini", api_key="sk-test", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ModelRequestsForbidden):
        await chat_model.chat(MESSAGES)
