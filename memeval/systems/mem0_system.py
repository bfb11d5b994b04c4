"""`mem0`: the Mem0 open-source library (`mem0ai`) as a peer memory system, fully offline.

Each completed turn goes to Mem0's `add()` (Mem0 2.x: one LLM call that extracts facts and
only adds); at read time Mem0's `search()` (embedder and vector store, no LLM) picks the
top-k memories for the user's message. The snapshot lists every stored memory, oldest first,
so fact tracking and write checks apply as to a memory file. The library is imported only
when the system is built (`build_mem0`), so everything else runs without it.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote

from memeval.errors import ConfigError
from memeval.models.accounting import CallSink
from memeval.systems.base import MemoryKey
from memeval.systems.mem0_setup import (
    EMBEDDER_PACKAGE,
    EMBEDDER_VERSION,
    LlmMeter,
    Mem0Env,
    Serialized,
    current_report,
    embedder_dir,
    import_mem0,
    mem0_config,
    updater_endpoint,
)
from memeval.systems.retrieval import TOOL_RESULT_LIMIT, render_facts
from reference_memory.report import Status, UpdateReport
from reference_memory.turn import Turn

if TYPE_CHECKING:
    from memeval.tracing.spans import Tracing

APPLIED = ("ADD", "UPDATE", "DELETE")  # Mem0 events that change the store (NONE does not)
ALL_MEMORIES = 10_000  # get_all() returns at most this many; a scenario stores far fewer


class Mem0Like(Protocol):
    """The part of `mem0.Memory` this system uses (2.x signatures, answers {"results": [...]})."""

    def add(self, messages: list[dict[str, str]], *, user_id: str, infer: bool = True) -> Any: ...

    def search(self, query: str, *, top_k: int, filters: dict[str, Any]) -> Any: ...

    def get_all(self, *, filters: dict[str, Any], top_k: int) -> Any: ...

    def delete_all(self, user_id: str | None = None) -> Any: ...


class Mem0Memory:
    """Mem0 behind memeval's MemorySystem protocol: add() per turn, search() per request."""

    name = "mem0"

    def __init__(
        self,
        memory: Mem0Like,
        *,
        k: int = 8,
        budget_chars: int = 2000,
        details: Mapping[str, Any] | None = None,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.memory = memory
        self.k = k
        self.budget_chars = budget_chars
        self.details = dict(details or {})  # embedder, vector store, versions (settings())
        self._on_close = on_close
        self._locks: dict[MemoryKey, asyncio.Lock] = {}

    def settings(self) -> Mapping[str, Any]:
        return {"k": self.k, "budget_chars": self.budget_chars, **self.details}

    async def context(self, key: MemoryKey) -> str | None:
        """No query known: the newest memories that fit the budget, newest first."""
        return self._render(reversed(await self._memories(key)))

    async def context_for(self, key: MemoryKey, query: str) -> str | None:
        """The top-k memories Mem0's search ranks best for the user's message."""
        if not query.strip():  # Mem0 rejects an empty query
            return await self.context(key)
        filters = {"user_id": user_id(key)}
        found = await asyncio.to_thread(self.memory.search, query, top_k=self.k, filters=filters)
        return self._render(_memory_text(item) for item in _results(found))

    async def snapshot(self, key: MemoryKey) -> str:
        return "".join(f"- {text}\n" for text in await self._memories(key))

    async def restore(
        self, key: MemoryKey, snapshot: str, turns: Sequence[tuple[str, Turn]]
    ) -> None:
        """A resumed run continues from the snapshot of its last complete turn: when the
        store is ahead of it (an add landed after the last saved turn), its lines are stored
        again verbatim (infer=False: no LLM call)."""
        if await self.snapshot(key) == snapshot:
            return
        lines = [line[2:] for line in snapshot.splitlines() if line.startswith("- ")]

        def rebuild() -> None:
            self.memory.delete_all(user_id=user_id(key))
            for line in lines:
                self.memory.add(
                    [{"role": "user", "content": line}], user_id=user_id(key), infer=False
                )

        await asyncio.to_thread(rebuild)

    async def observe(self, key: MemoryKey, turn: Turn) -> UpdateReport:
        """Give the turn to Mem0's add(); never raises (failures go into the report)."""
        report = UpdateReport(strategy="mem0", safety_strategy="")
        started = time.perf_counter()
        try:
            async with self._locks.setdefault(key, asyncio.Lock()):
                report.file_before = report.file_after = await self.snapshot(key)
                messages = mem0_messages(turn)
                if not turn.completed:
                    report.status = Status.NOT_COMPLETED.value
                elif messages:
                    await self._add(key, messages, report)
                    report.file_after = await self.snapshot(key)
        except Exception as exc:  # the library, its model or its store failed
            report.status = Status.FAILED.value
            report.errors.append(f"{type(exc).__name__}: {exc}")
        report.timings["total"] = time.perf_counter() - started
        return report

    def close(self) -> None:
        if self._on_close is not None:
            self._on_close()

    async def _add(
        self, key: MemoryKey, messages: list[dict[str, str]], report: UpdateReport
    ) -> None:
        token = current_report.set(report)
        started = time.perf_counter()
        try:
            result = await asyncio.to_thread(self.memory.add, messages, user_id=user_id(key))
        finally:
            report.timings["add"] = time.perf_counter() - started
            current_report.reset(token)
        report.ops = applied_ops(result)
        failed = [call.error for call in report.calls if call.error]
        if report.ops:
            report.status = Status.WRITTEN.value
        elif failed:  # Mem0 swallows an unreadable answer: "nothing learned" would hide it
            report.status = Status.FAILED.value
            report.errors += [f"mem0 stored nothing: {error}" for error in failed]
        else:
            report.status = Status.UNCHANGED.value

    async def _memories(self, key: MemoryKey) -> list[str]:
        """Every stored memory's text, oldest first (by created_at where Mem0 gives it)."""
        filters = {"user_id": user_id(key)}
        found = await asyncio.to_thread(self.memory.get_all, filters=filters, top_k=ALL_MEMORIES)
        items = _results(found)
        items.sort(key=lambda item: (item.get("created_at") is None, item.get("created_at") or ""))
        return [_memory_text(item) for item in items]

    def _render(self, texts: Iterable[str]) -> str | None:
        # the retrieval system's rendering and header: the two differ only in what they pick
        return render_facts(texts, self.k, self.budget_chars)


def user_id(key: MemoryKey) -> str:
    """Mem0's user_id for a (user, space): both parts %-escaped (Mem0 refuses whitespace) and
    joined by "/", so distinct keys never share memories."""
    return f"{quote(key.user, safe='')}/{quote(key.space, safe='')}"


def mem0_messages(turn: Turn) -> list[dict[str, str]]:
    """The turn as Mem0 reads a conversation: user and assistant text only (it skips other
    roles), so tool calls and their results (cut as retrieval's extractor sees them) are
    folded into the assistant's text in order."""
    out: list[dict[str, str]] = []
    for message in turn.messages:
        role = message.get("role")
        if role == "user":
            out.append({"role": "user", "content": _text(message.get("content"))})
            continue
        parts = [_text(message.get("content"))] if role == "assistant" else []
        for call in message.get("tool_calls") or [] if role == "assistant" else []:
            function = call.get("function") or {}
            parts.append(f"[tool call {function.get('name')}: {_text(function.get('arguments'))}]")
        if role == "tool":
            parts.append(
                f"[tool result {message.get('name') or ''}: {_cut(message.get('content'))}]"
            )
        text = "\n".join(part for part in parts if part.strip())
        if not text:
            continue
        if out and out[-1]["role"] == "assistant":
            out[-1]["content"] += "\n" + text
        else:
            out.append({"role": "assistant", "content": text})
    return [m for m in out if m["content"].strip()]


def applied_ops(result: Any) -> list[dict[str, Any]]:
    """The store changes Mem0 reported, as update-report ops: {"op": "add", "id", "text"}
    ("old" too for an update); NONE events change nothing and are left out."""
    ops: list[dict[str, Any]] = []
    for item in _results(result):
        event = str(item.get("event", "")).upper()
        if event in APPLIED:
            op = {"op": event.lower(), "id": item.get("id"), "text": _memory_text(item)}
            if item.get("previous_memory"):
                op["old"] = str(item["previous_memory"])
            ops.append(op)
    return ops


def _results(found: Any) -> list[dict[str, Any]]:
    """The memory dicts of a Mem0 answer ({"results": [...]}, or a bare list)."""
    items = found.get("results", []) if isinstance(found, Mapping) else found
    return [dict(item) for item in items or [] if isinstance(item, Mapping)]


def _memory_text(item: Mapping[str, Any]) -> str:
    return " ".join(str(item.get("memory") or "").split())


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _cut(value: Any) -> str:
    text = _text(value)
    if len(text) <= TOOL_RESULT_LIMIT:
        return text
    return f"{text[:TOOL_RESULT_LIMIT]} [... {len(text) - TOOL_RESULT_LIMIT} chars omitted]"


def build_mem0(
    env: Mem0Env,
    *,
    calls: CallSink | None = None,
    tracing: Tracing | None = None,
    k: int = 8,
    budget_chars: int = 2000,
) -> Mem0Memory:
    """Mem0 for one scenario repeat: its LLM is the run's updater model (an `openai:` endpoint
    as configured, or the embedded model served on 127.0.0.1), its embedder the pinned
    MiniLM package, its Qdrant store and history database in the unit's private directory.
    `calls` is the run's call sink (each Mem0 LLM call is counted there); with `tracing` each
    Mem0 LLM call is also an LLM span, under the memory.update span of the turn."""
    if os.environ.get("OPENROUTER_API_KEY"):
        raise ConfigError(
            "unset OPENROUTER_API_KEY for --memory mem0: with it set, Mem0 sends every LLM "
            "call to OpenRouter instead of the run's updater model"
        )
    endpoint = updater_endpoint(env)
    weights_dir = embedder_dir()
    env.workdir.mkdir(parents=True, exist_ok=True)
    memory_cls, version = import_mem0(env.workdir / "mem0-home")
    meter = LlmMeter(endpoint.spec, calls, tracing)
    memory = memory_cls.from_config(mem0_config(endpoint, weights_dir, env.workdir, meter))
    memory.llm.generate_response = meter.wrap(memory.llm.generate_response)
    if endpoint.spec.startswith("local:"):
        # llama_cpp.server keeps computing a request its client gave up on: a retry would
        # queue a second 8k-token prompt behind it on the same CPU
        memory.llm.client = memory.llm.client.with_options(max_retries=0)
    client = memory.vector_store.client
    memory.vector_store.client = Serialized(client)

    def close() -> None:
        memory.close()  # the history database
        client.close()  # Qdrant's files and its lock on the directory

    details = {
        "llm": endpoint.spec,
        "llm_base_url": endpoint.base_url,
        "llm_max_tokens": memory.llm.config.max_tokens,  # Mem0's default: 2000
        "embedder": f"huggingface:{EMBEDDER_PACKAGE}=={EMBEDDER_VERSION} (all-MiniLM-L6-v2)",
        "vector_store": "qdrant (local path)",
        "mem0ai": version,
    }
    return Mem0Memory(memory, k=k, budget_chars=budget_chars, details=details, on_close=close)
