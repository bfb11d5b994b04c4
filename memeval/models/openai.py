"""`openai:MODEL`: any OpenAI-compatible chat endpoint through the `openai` package.

OPENAI_API_KEY / OPENAI_BASE_URL select the server (OpenAI, vLLM, Ollama, llama.cpp server).
Structured output: before the first call with a schema, one tiny probe per mode (strongest
first) finds the response-format mode this server accepts, once per model instance; an error
whose text names `response_format`, `json_schema` or a schema is a rejection that steps down,
whatever its status code (llama-cpp-python's server answers json_schema with HTTP 500), and is
never retried. A server that rejects `tools` gets them in the prompt instead (the reply is one
JSON object: a call or an answer); a response without `usage` gets its tokens estimated
(4 characters a token) and says so in `capabilities()`. Rate limits, other 5xx, timeouts,
garbage bodies and non-JSON answers to a schema are retried with exponential backoff; at most
`concurrency` requests per model are in flight.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import openai
from openai import AsyncOpenAI

from memeval.errors import ConfigError
from memeval.models import guard
from memeval.models.base import ChatResponse, Message, ModelError, ToolCall, ToolChoice

DEFAULT_CONCURRENCY = 8
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_RETRIES = 4  # attempts after the first
PLACEHOLDER_KEY = "not-needed"  # compatible servers on OPENAI_BASE_URL often take no key

# Response-format modes, strongest first; a server that rejects one gets the next.
JSON_MODES = ("json_schema", "json_schema-loose", "json_object+schema", "json_object", "prompt")
# An error whose text names one of these rejects the response format, whatever its status.
FORMAT_WORDS = ("response_format", "json_schema", "schema")
TOOL_WORDS = ("tools", "tool_choice", "tool call", "function call")
# A server-side request validation failure, whatever its status (llama-cpp-python's server
# answers one with HTTP 500): asking again cannot help.
VALIDATION_WORDS = ("validation error",)
PROBE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}
PROBE_MESSAGES: list[Message] = [
    {"role": "user", "content": 'Reply with this JSON object and nothing else: {"ok": true}'}
]
TOOL_PROBE: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "current_time",
            "description": "The current time in a time zone.",
            "parameters": {
                "type": "object",
                "properties": {"zone": {"type": "string"}},
                "required": ["zone"],
            },
        },
    }
]
TOOL_PROBE_MESSAGES: list[Message] = [
    {"role": "user", "content": "What time is it in UTC? Call the current_time function."}
]
PROMPT_TOOLS = """You can call these functions (JSON signatures):
{signatures}

Reply with exactly one JSON object and nothing else:
- to call a function: {{"name": "<function name>", "arguments": {{...}}}}
- to reply to the user: {{"answer": "<your reply>"}}"""
PROMPT_TOOLS_REQUIRED = """You can call these functions (JSON signatures):
{signatures}

Reply with exactly one JSON object and nothing else, a call of one of them:
{{"name": "<function name>", "arguments": {{...}}}}"""
CHARS_PER_TOKEN = 4  # the estimate used when a server reports no usage

_RETRYABLE = (
    openai.RateLimitError,
    openai.InternalServerError,
    openai.APITimeoutError,
    openai.APIConnectionError,
    openai.APIResponseValidationError,
)


class _Garbage(Exception):
    """A 200 response whose content is unusable (bad JSON, bad tool arguments): retried."""


def missing_key_message(spec: str) -> str:
    return (
        f"{spec} needs OPENAI_API_KEY: export OPENAI_API_KEY=sk-... (for a compatible server "
        "also set OPENAI_BASE_URL=http://HOST:PORT/v1), or run offline with --model local"
    )


class OpenAIModel:
    """ChatModel over the Chat Completions API of any OpenAI-compatible server."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_retries: int = DEFAULT_RETRIES,
        backoff_s: float = 0.5,
    ) -> None:
        self.model = model
        self.name = f"openai:{model}"
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY") or None
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        if self.api_key is None and self.base_url is None:
            raise ConfigError(missing_key_message(self.name))
        self.concurrency = max(1, concurrency)
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.json_mode = JSON_MODES[0]  # steps down when the server rejects it
        self.json_mode_settled = False  # True once a probe (or a call) found a working mode
        self.probe_calls = 0  # requests spent finding the mode (not a turn's calls)
        self.prompt_tools = False  # the server rejects or ignores `tools`: they go in the prompt
        self.tools_settled = False  # True once a probe (or a call) decided how tools go
        self.usage_estimated = False  # a response came without `usage`
        self._send_temperature = True
        self._send_tool_choice = True  # False once the server rejects `tool_choice`
        self._max_tokens_key = "max_tokens"
        # httpx clients, semaphores and locks belong to one event loop: one of each per loop.
        self._per_loop: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[AsyncOpenAI, asyncio.Semaphore, asyncio.Lock]
        ] = weakref.WeakKeyDictionary()

    def _client(self) -> tuple[AsyncOpenAI, asyncio.Semaphore]:
        client, limit, _ = self._loop_state()
        return client, limit

    def _loop_state(self) -> tuple[AsyncOpenAI, asyncio.Semaphore, asyncio.Lock]:
        loop = asyncio.get_running_loop()
        if loop not in self._per_loop:
            client = AsyncOpenAI(
                api_key=self.api_key or PLACEHOLDER_KEY,
                base_url=self.base_url,
                timeout=self.timeout_s,
                max_retries=0,  # retries happen here, where garbage answers are retried too
            )
            self._per_loop[loop] = (client, asyncio.Semaphore(self.concurrency), asyncio.Lock())
        return self._per_loop[loop]

    def capabilities(self) -> dict[str, Any]:
        """What this run learned about the server (run.json records it per role)."""
        return {
            "json_mode": self.json_mode if self.json_mode_settled else None,
            "probe_calls": self.probe_calls,
            "tools": ("prompt" if self.prompt_tools else "native") if self.tools_settled else None,
            "usage": "estimated" if self.usage_estimated else "reported",
        }

    async def settle_tools(self) -> bool:
        """Whether this server calls tools natively, found once by a tiny probe: a request
        that needs a tool, answered with a native call of it. A server that rejects `tools`,
        or accepts and ignores them (llama-cpp-python's server with a chat format without
        function calling answers in text), gets them in the prompt instead. A probe that
        fails for another reason leaves it undecided (native until a call is rejected)."""
        if self.tools_settled:
            return not self.prompt_tools
        client, limit, lock = self._loop_state()
        async with lock:
            if self.tools_settled:
                return not self.prompt_tools
            request = self._request(TOOL_PROBE_MESSAGES, TOOL_PROBE, None, None, 64, 0.0)
            self.probe_calls += 1
            try:
                async with limit:
                    raw = await _create(client, request)
                calls = _parse(raw, False).tool_calls
            except openai.APIStatusError as exc:
                if not _names(exc, TOOL_WORDS):
                    return True
                calls = []
            except (*_RETRYABLE, _Garbage, ModelError):
                return True
            self.prompt_tools = not any(c.name == "current_time" for c in calls)
            self.tools_settled = True
        return not self.prompt_tools

    async def settle_json_mode(self) -> str:
        """The response-format mode this server accepts, found once by a tiny probe per mode
        (strongest first); concurrent callers wait for the one probe. A probe that fails for
        another reason (rate limit, timeout, server fault) leaves the mode unsettled: the
        calls themselves then step down or retry."""
        if self.json_mode_settled:
            return self.json_mode
        client, limit, lock = self._loop_state()
        async with lock:
            while not self.json_mode_settled:
                mode = self.json_mode
                request = self._request(PROBE_MESSAGES, None, PROBE_SCHEMA, mode, 64, 0.0)
                self.probe_calls += 1
                try:
                    async with limit:
                        raw = await _create(client, request)
                    _parse(raw, True)
                except openai.APIStatusError as exc:
                    if self._adapt(exc, mode) and mode != self.json_mode:
                        continue  # this mode is rejected: probe the next one
                    if self._adapt_parameters(exc):
                        continue
                    return self.json_mode
                except _Garbage:
                    if not self._step_down(mode):
                        self.json_mode_settled = True
                    continue  # accepted but not JSON: a weaker mode may constrain better
                except (openai.APITimeoutError, openai.APIConnectionError, ModelError):
                    return self.json_mode
                self.json_mode_settled = True
        return self.json_mode

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        schema: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        tool_choice: ToolChoice = "auto",
    ) -> ChatResponse:
        guard.check_allowed(self.name)
        if schema is not None and not self.json_mode_settled:
            await self.settle_json_mode()
        if tools and not self.tools_settled:
            await self.settle_tools()
        client, limit = self._client()
        started = time.perf_counter()
        attempt = 0
        while True:
            mode = self.json_mode if schema is not None else None
            listed, choice = tools, tool_choice
            if (
                tools
                and tool_choice == "none"
                and (self.prompt_tools or not self._send_tool_choice)
            ):
                # "none" the server cannot be told: the tools go, so nothing can call them
                listed, choice = None, "auto"
            prompt_tools = bool(listed) and self.prompt_tools
            # A server without tool calling never sees tool-call messages, tools or not (an
            # agent's last round asks without tools over a history that has calls in it).
            sent = _plain_history(messages) if self.prompt_tools else list(messages)
            request = self._request(
                _with_tools_prompt(sent, listed, choice) if prompt_tools and listed else sent,
                None if prompt_tools else listed,
                schema,
                mode,
                max_tokens,
                temperature,
                choice,
            )
            try:
                async with limit:
                    raw = await _create(client, request)
                response = _parse(raw, schema is not None)
                if prompt_tools and listed:
                    response = _tool_reply(response, listed)
            except openai.APIStatusError as exc:
                # Format and tools rejections step down whatever the status (never retried).
                if self._adapt(exc, mode):
                    continue
                if "tool_choice" in request and "tool_choice" in _error_text(exc):
                    self._send_tool_choice = False  # the model still may call; never forced
                    continue
                if tools and not self.prompt_tools and _names(exc, TOOL_WORDS):
                    self.prompt_tools = self.tools_settled = True
                    continue
                if isinstance(
                    exc, openai.BadRequestError | openai.UnprocessableEntityError
                ) or _names(exc, VALIDATION_WORDS):
                    if self._adapt_parameters(exc):
                        continue  # the server rejected a parameter we can do without
                    raise ModelError(f"{self.name}: request rejected: {_brief(exc)}") from exc
                if not isinstance(exc, _RETRYABLE):
                    raise ModelError(f"{self.name}: HTTP {exc.status_code}: {_brief(exc)}") from exc
                await self._back_off(attempt, exc)
                attempt += 1
                continue
            except (*_RETRYABLE, _Garbage) as exc:
                await self._back_off(attempt, exc)
                attempt += 1
                continue
            if raw_usage_missing(raw):
                self.usage_estimated = True
                response.prompt_tokens = _estimate(request["messages"])
                response.completion_tokens = _estimate(
                    [{"content": response.content or ""}]
                    + [{"content": json.dumps(c.arguments)} for c in response.tool_calls]
                )
            if mode is not None:
                self.json_mode_settled = True  # this mode answered: keep it
            response.latency_s = time.perf_counter() - started
            response.model = self.name
            return response

    async def send(self, request: Mapping[str, Any]) -> Any:
        """One raw chat-completions request on this model's client, answered as the server
        answers it (no retry, no stepping down): for probes that must see exactly that. A body
        that is not JSON raises ModelError."""
        client, limit = self._client()
        async with limit:
            try:
                return await _create(client, dict(request))
            except _Garbage as exc:
                raise ModelError(f"{self.name}: {exc}") from exc

    def probe_request(self, mode: str) -> dict[str, Any]:
        """The JSON-mode probe (PROBE_SCHEMA) as a request in `mode`."""
        return self._request(PROBE_MESSAGES, None, PROBE_SCHEMA, mode, 64, 0.0)

    def _request(
        self,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]] | None,
        schema: Mapping[str, Any] | None,
        mode: str | None,
        max_tokens: int | None,
        temperature: float,
        tool_choice: ToolChoice = "auto",
    ) -> dict[str, Any]:
        request: dict[str, Any] = {"model": self.model, "messages": list(messages)}
        if self._send_temperature:
            request["temperature"] = temperature
        if max_tokens is not None:
            request[self._max_tokens_key] = max_tokens
        if tools:
            request["tools"] = [dict(t) for t in tools]
            if tool_choice != "auto" and self._send_tool_choice:
                request["tool_choice"] = tool_choice
        if schema is None or mode is None:
            return request
        if mode.startswith("json_schema"):
            strict = mode == "json_schema" and _strict(schema)
            spec = {"name": "answer", "schema": dict(schema), "strict": strict}
            request["response_format"] = {"type": "json_schema", "json_schema": spec}
            return request
        # Weaker modes: the schema also goes into the prompt, last, so cached prefixes survive.
        hint = f"Reply with one JSON object valid against this JSON schema:\n{json.dumps(schema)}"
        request["messages"] = [*messages, {"role": "system", "content": hint}]
        if mode == "json_object+schema":  # llama.cpp's server constrains with the schema
            request["response_format"] = {"type": "json_object", "schema": dict(schema)}
        elif mode == "json_object":
            request["response_format"] = {"type": "json_object"}
        return request

    def _adapt(self, exc: openai.APIStatusError, mode: str | None) -> bool:
        """A rejection of the response format (any status whose text names it): step down to
        the next mode, once per model instance. False when `exc` is something else or no
        weaker mode is left."""
        if mode is None or not _names(exc, FORMAT_WORDS):
            return False
        if self.json_mode != mode:
            return True  # another call stepped down already: ask again in the new mode
        return self._step_down(mode)

    def _step_down(self, mode: str) -> bool:
        index = JSON_MODES.index(mode)
        if index + 1 >= len(JSON_MODES):
            return False
        self.json_mode = JSON_MODES[index + 1]
        return True

    def _adapt_parameters(self, exc: openai.APIStatusError) -> bool:
        """Learn from a 400/422 that names a parameter this server or model does not take:
        reasoning models reject `temperature` and want `max_completion_tokens`. Each
        adaptation happens once per model instance."""
        text = _error_text(exc)
        if "temperature" in text and self._send_temperature:
            self._send_temperature = False
            return True
        if "max_tokens" in text and self._max_tokens_key == "max_tokens":
            self._max_tokens_key = "max_completion_tokens"
            return True
        return False

    async def _back_off(self, attempt: int, exc: BaseException) -> None:
        """Wait before retry `attempt + 1`; a ModelError once the retries are spent."""
        if attempt >= self.max_retries:
            raise ModelError(
                f"{self.name}: failed after {attempt + 1} attempts: {_brief(exc)}"
            ) from exc
        await asyncio.sleep(self._delay(attempt, exc))

    def _delay(self, attempt: int, exc: BaseException) -> float:
        """Retry-After when the server sends one, else exponential backoff with jitter."""
        response = getattr(exc, "response", None)
        header = response.headers.get("retry-after") if response is not None else None
        if header:
            try:
                return min(float(header), 60.0)
            except ValueError:
                pass
        return self.backoff_s * (2**attempt) * (0.5 + random.random() / 2)


async def _create(client: AsyncOpenAI, request: dict[str, Any]) -> Any:
    try:
        return await client.chat.completions.create(**request)
    except ValueError as exc:  # the SDK could not decode the body: a garbage response
        raise _Garbage(f"response body is not JSON: {exc}") from exc


def _parse(raw: Any, want_json: bool) -> ChatResponse:
    """The first choice as a ChatResponse; unusable content raises _Garbage (retried)."""
    choices = getattr(raw, "choices", None)
    if not choices:
        raise _Garbage(f"no choices in response: {str(raw)[:200]}")
    message = choices[0].message
    calls: list[ToolCall] = []
    for call in message.tool_calls or []:
        try:
            arguments = json.loads(call.function.arguments or "{}")
        except ValueError as exc:
            raise _Garbage(f"tool call {call.function.name}: arguments are not JSON") from exc
        if not isinstance(arguments, dict):
            raise _Garbage(f"tool call {call.function.name}: arguments are not an object")
        calls.append(ToolCall(id=call.id, name=call.function.name, arguments=arguments))
    content = message.content
    if want_json and not calls and getattr(choices[0], "finish_reason", None) == "length":
        # Deterministic: asking again would cut it off at the same place.
        raise ModelError(f"JSON answer cut off at max_tokens: {(content or '')[-80:]!r}")
    if want_json and not calls:
        try:
            json.loads(content or "", strict=False)
        except ValueError as exc:
            raise _Garbage(f"answer is not JSON: {(content or '')[:120]!r}") from exc
    usage = getattr(raw, "usage", None)
    return ChatResponse(
        content=content,
        tool_calls=calls,
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
    )


def _error_text(exc: openai.APIStatusError) -> str:
    """The error's message and body, lowercased: what a rejection names."""
    body = getattr(exc, "body", None)
    return f"{exc} {json.dumps(body, default=str) if body is not None else ''}".lower()


def _names(exc: openai.APIStatusError, words: Sequence[str]) -> bool:
    text = _error_text(exc)
    return any(word in text for word in words)


def raw_usage_missing(raw: Any) -> bool:
    usage = getattr(raw, "usage", None)
    return usage is None or not (getattr(usage, "prompt_tokens", 0) or 0)


def _estimate(messages: Sequence[Mapping[str, Any]]) -> int:
    chars = sum(
        len(m.get("content") or "") if isinstance(m.get("content"), str) else 0 for m in messages
    )
    return max(1, -(-chars // CHARS_PER_TOKEN))


def _plain_history(messages: Sequence[Message]) -> list[Message]:
    """For a server without tool calling: earlier calls as the assistant's JSON and their
    results as user turns, in the protocol the prompt describes."""
    out: list[Message] = []
    for message in messages:
        role = message.get("role")
        if role == "assistant" and message.get("tool_calls"):
            calls = [
                {"name": c["function"]["name"], "arguments": _arguments(c["function"])}
                for c in message["tool_calls"]
            ]
            content = json.dumps(calls[0] if len(calls) == 1 else calls)
            out.append({"role": "assistant", "content": content})
        elif role == "tool":
            name = message.get("name") or "the function"
            out.append({"role": "user", "content": f"Result of {name}: {message.get('content')}"})
        else:
            out.append(dict(message))
    return out


def _with_tools_prompt(
    messages: list[Message], tools: Sequence[Mapping[str, Any]], tool_choice: ToolChoice = "auto"
) -> list[Message]:
    """The tools described last, so static prefixes stay cacheable."""
    signatures = "\n".join(
        json.dumps(t.get("function", t), ensure_ascii=False, sort_keys=True) for t in tools
    )
    text = PROMPT_TOOLS_REQUIRED if tool_choice == "required" else PROMPT_TOOLS
    return [*messages, {"role": "system", "content": text.format(signatures=signatures)}]


def _arguments(function: Mapping[str, Any]) -> Any:
    try:
        return json.loads(function.get("arguments") or "{}")
    except ValueError:
        return {}


def _tool_reply(response: ChatResponse, tools: Sequence[Mapping[str, Any]]) -> ChatResponse:
    """A prompt-tools reply as a tool call or an answer; anything else stays the answer."""
    text = (response.content or "").strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return response
    names = {t.get("function", t).get("name") for t in tools}
    if isinstance(data, dict) and data.get("name") in names:
        given = data.get("arguments")
        arguments: dict[str, Any] = given if isinstance(given, dict) else {}
        call_id = "call_" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
        response.content, response.tool_calls = None, [ToolCall(call_id, data["name"], arguments)]
    elif isinstance(data, dict) and isinstance(data.get("answer"), str):
        response.content = data["answer"]
    return response


def _strict(schema: Mapping[str, Any]) -> bool:
    """OpenAI's strict mode needs every object closed and every property required."""
    if schema.get("type") == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False:
            return False
        if set(schema.get("required") or []) != set(props):
            return False
    children: list[Any] = list((schema.get("properties") or {}).values())
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), Mapping):
            children.append(schema[key])
    for key in ("anyOf", "allOf", "$defs", "definitions"):
        value = schema.get(key)
        children.extend(value.values() if isinstance(value, Mapping) else value or [])
    return all(_strict(c) for c in children if isinstance(c, Mapping))


def answered_json(raw: Any) -> bool:
    """Whether a raw chat-completions answer carries usable JSON content."""
    try:
        _parse(raw, True)
    except _Garbage:
        return False
    return True


def brief(exc: BaseException) -> str:
    """An exception on one line, at most 300 characters."""
    return _brief(exc)


def _brief(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".replace("\n", " ")[:300]
