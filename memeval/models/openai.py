"""`openai:MODEL`: any OpenAI-compatible chat endpoint through the `openai` package.

OPENAI_API_KEY / OPENAI_BASE_URL select the server (OpenAI, vLLM, Ollama, llama.cpp server).
Structured output asks for `json_schema` first and steps down, once per model, to the forms a
server accepts (llama.cpp's server rejects OpenAI-style json_schema). Rate limits, 5xx,
timeouts, garbage bodies and non-JSON answers to a schema are retried with exponential
backoff; at most `concurrency` requests per model are in flight.
"""

from __future__ import annotations

import asyncio
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
from memeval.models.base import ChatResponse, Message, ModelError, ToolCall

DEFAULT_CONCURRENCY = 8
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_RETRIES = 4  # attempts after the first
PLACEHOLDER_KEY = "not-needed"  # compatible servers on OPENAI_BASE_URL often take no key

# Response-format modes, strongest first; a server that rejects one gets the next.
JSON_MODES = ("json_schema", "json_schema-loose", "json_object+schema", "json_object", "prompt")

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
        self._send_temperature = True
        self._max_tokens_key = "max_tokens"
        # httpx clients and semaphores belong to one event loop: keep one of each per loop.
        self._per_loop: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[AsyncOpenAI, asyncio.Semaphore]
        ] = weakref.WeakKeyDictionary()

    def _client(self) -> tuple[AsyncOpenAI, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if loop not in self._per_loop:
            client = AsyncOpenAI(
                api_key=self.api_key or PLACEHOLDER_KEY,
                base_url=self.base_url,
                timeout=self.timeout_s,
                max_retries=0,  # retries happen here, where garbage answers are retried too
            )
            self._per_loop[loop] = (client, asyncio.Semaphore(self.concurrency))
        return self._per_loop[loop]

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        schema: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> ChatResponse:
        guard.check_allowed(self.name)
        client, limit = self._client()
        started = time.perf_counter()
        attempt = 0
        while True:
            mode = self.json_mode if schema is not None else None
            request = self._request(messages, tools, schema, mode, max_tokens, temperature)
            try:
                async with limit:
                    raw = await _create(client, request)
                response = _parse(raw, schema is not None)
            except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
                if self._adapt(exc, mode):
                    continue  # the server rejected a parameter we can do without: ask again
                raise ModelError(f"{self.name}: request rejected: {_brief(exc)}") from exc
            except (*_RETRYABLE, _Garbage) as exc:
                if attempt >= self.max_retries:
                    raise ModelError(
                        f"{self.name}: failed after {attempt + 1} attempts: {_brief(exc)}"
                    ) from exc
                await asyncio.sleep(self._delay(attempt, exc))
                attempt += 1
                continue
            except openai.APIStatusError as exc:
                raise ModelError(f"{self.name}: HTTP {exc.status_code}: {_brief(exc)}") from exc
            response.latency_s = time.perf_counter() - started
            response.model = self.name
            return response

    def _request(
        self,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]] | None,
        schema: Mapping[str, Any] | None,
        mode: str | None,
        max_tokens: int | None,
        temperature: float,
    ) -> dict[str, Any]:
        request: dict[str, Any] = {"model": self.model, "messages": list(messages)}
        if self._send_temperature:
            request["temperature"] = temperature
        if max_tokens is not None:
            request[self._max_tokens_key] = max_tokens
        if tools:
            request["tools"] = [dict(t) for t in tools]
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
        """Learn from a 400/422 that names a parameter this server or model does not take.

        Reasoning models reject `temperature` and want `max_completion_tokens`; some servers
        reject a response_format. Each adaptation happens once per model instance.
        """
        text = str(exc).lower()
        if "temperature" in text and self._send_temperature:
            self._send_temperature = False
            return True
        if "max_tokens" in text and self._max_tokens_key == "max_tokens":
            self._max_tokens_key = "max_completion_tokens"
            return True
        if mode is None or not any(w in text for w in ("response_format", "schema", "json")):
            return False
        index = JSON_MODES.index(mode)
        if index + 1 >= len(JSON_MODES):
            return False
        if self.json_mode == mode:
            self.json_mode = JSON_MODES[index + 1]
        return True

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


def _brief(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".replace("\n", " ")[:300]
