"""A content-addressed response cache in SQLite: identical requests are answered without a model.

The key hashes everything that can change an answer: the model spec, messages, tools,
schema, sampling parameters, the model's own `decoding` name when it has one (an embedded
model's names its decoding and a hash of the code that renders its requests and reads its
replies), and the repeat index (so `--repeat 3` asks three times, and a re-run or resumed run
replays each repeat offline). Failed calls are not cached, except an embedded model's
unusable reply (ReplyError): like an answer, it is what the model gave, not a passing fault;
such a failure is kept in a table of its own (a reader that predates it never meets it) and
raised again on a hit, marked cached, so a re-run of a run with one needs no model at all.
WAL mode plus a busy timeout let two processes share one file; a lock serializes this
process's threads, and the event loop never waits on SQLite (calls run in a worker thread).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from memeval.models.base import (
    ChatModel,
    ChatResponse,
    Message,
    ReplyError,
    ToolCall,
    ToolChoice,
)

log = logging.getLogger(__name__)

KEY_VERSION = 1  # bump when the key's content or the stored format changes

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    response TEXT NOT NULL,
    created_at REAL NOT NULL
)
"""
_FAILURES = """
CREATE TABLE IF NOT EXISTS reply_errors (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    error TEXT NOT NULL,
    created_at REAL NOT NULL
)
"""


def request_key(
    model: str,
    messages: Sequence[Message],
    tools: Sequence[Mapping[str, Any]] | None,
    schema: Mapping[str, Any] | None,
    parameters: Mapping[str, Any],
    repeat_index: int,
) -> str:
    """sha256 of the canonical JSON of one request."""
    payload = {
        "v": KEY_VERSION,
        "model": model,
        "messages": list(messages),
        "tools": list(tools) if tools is not None else None,
        "schema": schema,
        "parameters": dict(parameters),
        "repeat": repeat_index,
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """The SQLite file behind CachedModel; one instance may be shared by every model of a run."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(
            self.path, timeout=30.0, check_same_thread=False, isolation_level=None
        )
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(_SCHEMA)
            self._conn.execute(_FAILURES)
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> ChatResponse | None:
        """The stored response; raises the stored ReplyError (marked cached) for a request
        whose reply could not be used; None when neither is stored."""
        with self._lock:
            row = self._conn.execute(
                "SELECT response FROM responses WHERE key = ?", (key,)
            ).fetchone()
            failed = None
            if row is None:
                failed = self._conn.execute(
                    "SELECT error FROM reply_errors WHERE key = ?", (key,)
                ).fetchone()
        if row is None and failed is None:
            self.misses += 1
            return None
        self.hits += 1
        if failed is not None:
            raise ReplyError(str(failed[0]), cached=True)
        return _decode(row[0])

    def put(self, key: str, model: str, response: ChatResponse) -> None:
        self._insert("responses (key, model, response, created_at)", key, model, _encode(response))

    def put_failure(self, key: str, model: str, error: ReplyError) -> None:
        self._insert("reply_errors (key, model, error, created_at)", key, model, str(error))

    def _insert(self, into: str, key: str, model: str, value: str) -> None:
        with self._lock:
            self._conn.execute(
                f"INSERT OR REPLACE INTO {into} VALUES (?, ?, ?, ?)",
                (key, model, value, time.time()),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _encode(response: ChatResponse) -> str:
    data = dataclasses.asdict(response)
    data.pop("cached", None)
    return json.dumps(data, ensure_ascii=False)


def _decode(text: str) -> ChatResponse:
    data = json.loads(text)
    calls = [ToolCall(**call) for call in data.pop("tool_calls", [])]
    return ChatResponse(tool_calls=calls, **data)


class CachedModel:
    """Serves a request from the cache when it can; otherwise asks `inner` and stores the answer.

    A cached response says `cached=True`, and its latency is the lookup's, not the original's.
    """

    def __init__(self, inner: ChatModel, cache: ResponseCache, repeat_index: int = 0) -> None:
        self.inner = inner
        self.cache = cache
        self.repeat_index = repeat_index
        self.name = inner.name

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
        started = time.perf_counter()
        parameters: dict[str, Any] = {"max_tokens": max_tokens, "temperature": temperature}
        if tool_choice != "auto":  # keyed only when set, so earlier entries stay valid
            parameters["tool_choice"] = tool_choice
        decoding = getattr(self.inner, "decoding", None)
        if decoding:  # how a model decodes beyond these parameters (local models name it)
            parameters["decoding"] = decoding
        key = request_key(self.name, messages, tools, schema, parameters, self.repeat_index)
        try:
            hit = await asyncio.to_thread(self.cache.get, key)
        except sqlite3.Error as exc:  # a broken cache costs a model call, never the run
            log.warning("response cache lookup failed (%s); asking the model", exc)
            hit = None
        if hit is not None:
            hit.cached = True
            hit.latency_s = time.perf_counter() - started
            return hit
        try:
            response = await self.inner.chat(
                messages,
                tools=tools,
                schema=schema,
                max_tokens=max_tokens,
                temperature=temperature,
                tool_choice=tool_choice,
            )
        except ReplyError as exc:
            await self._store(self.cache.put_failure, key, exc, "the failure")
            raise
        await self._store(self.cache.put, key, response, "the answer")
        return response

    async def _store(
        self, put: Callable[[str, str, Any], None], key: str, value: Any, what: str
    ) -> None:
        """Write to the cache off the event loop; a broken cache costs only the caching."""
        try:
            await asyncio.to_thread(put, key, self.name, value)
        except sqlite3.Error as exc:
            log.warning("response cache write failed (%s); %s is not cached", exc, what)
