"""`retrieval`: the knowledge-store design one-file memory replaced (Mem0-like).

After each turn the summarizer model extracts atomic facts; each fact is resolved against
the few stored facts most like it (FTS5/BM25) by the updater model as ADD, UPDATE, DELETE or
NONE. At read time the top-k facts for the user's message are injected. The snapshot lists
every stored fact, so fact tracking and write checks apply to it as to a memory file.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memeval.systems.base import MemoryKey
from memeval.systems.fact_store import Entry, FactStore
from reference_memory.calls import Caller, ModelCallError
from reference_memory.model import MemoryModel, Message
from reference_memory.report import Status, UpdateReport
from reference_memory.templates import prompt_environment
from reference_memory.turn import Turn

KIND = "fact"
HEADER = (
    "Facts remembered from earlier sessions with this user. They may be incomplete; use the "
    "ones that bear on the request."
)
EVENTS = ("ADD", "UPDATE", "DELETE", "NONE")
TOOL_RESULT_LIMIT = 2000  # characters kept from each tool result shown to the extractor
MAX_TOKENS = {"summarizer": 600, "updater": 200}  # room for a whole answer: cut-off JSON fails
PROMPTS_DIR = Path(__file__).parents[1] / "prompts"


class ResolutionError(ValueError):
    """The updater's answer for one fact cannot be applied; that fact is skipped."""


@dataclass(frozen=True)
class Resolution:
    event: str
    id: int | None
    text: str


class RetrievalMemory:
    """Extract facts, resolve each against similar stored ones, serve the top-k per query."""

    name = "retrieval"

    def __init__(
        self,
        models: Mapping[str, MemoryModel],
        store: FactStore,
        *,
        k: int = 8,
        budget_chars: int = 2000,
        candidates: int = 5,
        max_facts: int = 8,
    ) -> None:
        self.models = models
        self.store = store
        self.k = k
        self.budget_chars = budget_chars
        self.candidates = candidates
        self.max_facts = max_facts
        self._locks: dict[MemoryKey, asyncio.Lock] = {}

    def settings(self) -> Mapping[str, Any]:
        return {
            "k": self.k,
            "budget_chars": self.budget_chars,
            "candidates": self.candidates,
            "ranking": "fts5-bm25",
            "max_facts": self.max_facts,
        }

    async def context(self, key: MemoryKey) -> str | None:
        """No query known: the newest facts that fit the budget, newest first."""
        entries = await asyncio.to_thread(self.store.entries, key, KIND)
        return self._render(reversed(entries))

    async def context_for(self, key: MemoryKey, query: str) -> str | None:
        """The top-k facts BM25 ranks best for the user's message, within the budget."""
        hits = await asyncio.to_thread(self.store.search, key, query, self.k, kinds=[KIND])
        return self._render(hits)

    async def snapshot(self, key: MemoryKey) -> str:
        entries = await asyncio.to_thread(self.store.entries, key, KIND)
        return "".join(f"- {entry.text}\n" for entry in entries)

    async def restore(
        self, key: MemoryKey, snapshot: str, turns: Sequence[tuple[str, Turn]]
    ) -> None:
        """A resumed run continues from the snapshot of its last complete turn."""
        facts = [line[2:] for line in snapshot.splitlines() if line.startswith("- ")]

        def rebuild() -> None:
            self.store.clear(key, KIND)
            for fact in facts:
                self.store.add(key, fact, kind=KIND)

        await asyncio.to_thread(rebuild)

    async def observe(self, key: MemoryKey, turn: Turn) -> UpdateReport:
        """Extract facts from the turn and resolve each; never raises for model failures."""
        report = UpdateReport(strategy="retrieval", safety_strategy="")
        started = time.perf_counter()
        try:
            async with self._locks.setdefault(key, asyncio.Lock()):
                report.file_before = report.file_after = await self.snapshot(key)
                if not turn.completed:
                    report.status = Status.NOT_COMPLETED.value
                else:
                    await self._learn(key, turn, report)
                if report.ops:
                    report.file_after = await self.snapshot(key)
        except Exception as exc:  # the store itself failed: the agent's user never sees it
            report.status = Status.FAILED.value
            report.errors.append(f"{type(exc).__name__}: {exc}")
        report.timings["total"] = time.perf_counter() - started
        return report

    def close(self) -> None:
        self.store.close()

    async def _learn(self, key: MemoryKey, turn: Turn, report: UpdateReport) -> None:
        caller = Caller(self.models, report, max_tokens=MAX_TOKENS)
        started = time.perf_counter()
        try:
            facts = await self._extract(turn, caller)
        except (ModelCallError, ValueError) as exc:
            report.status = Status.FAILED.value
            report.errors.append(f"extraction: {exc}")
            return
        finally:
            report.timings["extract"] = time.perf_counter() - started
        report.summary = "\n".join(facts)
        started = time.perf_counter()
        for fact in facts:
            try:
                await self._resolve(key, fact, caller, report.ops)
            except (ModelCallError, ResolutionError, sqlite3.Error) as exc:
                report.errors.append(f"fact {fact!r}: {exc}")
        report.timings["resolve"] = time.perf_counter() - started
        if report.ops:
            report.status = Status.WRITTEN.value
        else:  # every fact failed to resolve: an updater that is down is not "nothing learned"
            report.status = (Status.FAILED if report.errors else Status.UNCHANGED).value

    async def _extract(self, turn: Turn, caller: Caller) -> list[str]:
        """The turn's durable facts, whitespace-normalised, blanks and repeats dropped."""
        messages = _messages("retrieval_extract", transcript=_transcript(turn))
        _, data = await caller.json("summarizer", messages, extract_schema(self.max_facts))
        if not isinstance(data, dict) or not isinstance(data.get("facts"), list):
            raise ValueError(f'expected {{"facts": [...]}}, got {_brief(data)}')
        facts: list[str] = []
        for item in data["facts"]:
            if not isinstance(item, str):
                raise ValueError(f"every fact must be a string, got {_brief(item)}")
            fact = " ".join(item.split())
            if fact and _norm(fact) not in map(_norm, facts):
                facts.append(fact)
        return facts[: self.max_facts]

    async def _resolve(
        self, key: MemoryKey, fact: str, caller: Caller, applied: list[dict[str, Any]]
    ) -> None:
        """Apply one fact, appending each event to `applied` as soon as the store has it."""
        stored = await asyncio.to_thread(self.store.entries, key, KIND)
        if any(_norm(entry.text) == _norm(fact) for entry in stored):
            return
        similar = await asyncio.to_thread(
            self.store.search, key, fact, self.candidates, kinds=[KIND]
        )
        if not similar:
            applied.append(await self._add(key, fact))
            return
        messages = _messages("retrieval_resolve", fact=fact, stored=similar)
        schema = resolve_schema([entry.id for entry in similar])
        _, data = await caller.json("updater", messages, schema)
        resolution = parse_resolution(data, {entry.id: entry for entry in similar})
        text = resolution.text or fact
        if resolution.event == "NONE":
            return
        if resolution.event == "ADD":
            if not any(_norm(entry.text) == _norm(text) for entry in stored):
                applied.append(await self._add(key, text))
            return
        assert resolution.id is not None  # parse_resolution checked it
        old = next(entry.text for entry in similar if entry.id == resolution.id)
        if resolution.event == "UPDATE":
            if _norm(old) != _norm(text):
                if not await asyncio.to_thread(self.store.update, key, resolution.id, text):
                    raise ResolutionError(f"fact {resolution.id} vanished before the update")
                applied.append({"op": "update", "id": resolution.id, "old": old, "text": text})
            return
        if not await asyncio.to_thread(self.store.delete, key, resolution.id):
            raise ResolutionError(f"fact {resolution.id} vanished before the delete")
        applied.append({"op": "delete", "id": resolution.id, "old": old})
        if resolution.text:
            applied.append(await self._add(key, resolution.text))

    async def _add(self, key: MemoryKey, text: str) -> dict[str, Any]:
        new_id = await asyncio.to_thread(self.store.add, key, text, kind=KIND)
        return {"op": "add", "id": new_id, "text": text}

    def _render(self, entries: Iterable[Entry]) -> str | None:
        return render_facts((entry.text for entry in entries), self.k, self.budget_chars)


def render_facts(texts: Iterable[str], k: int, budget_chars: int) -> str | None:
    """The header and up to k "- fact" lines, in the given order, whose lines together stay
    within budget_chars (a fact too long for what is left, or empty, is skipped); None when
    no fact fits. Shared by every system that serves picked facts (retrieval, mem0)."""
    lines: list[str] = []
    used = 0  # characters of the lines so far, a newline after each
    for text in texts:
        if len(lines) >= k:
            break
        line = f"- {text}"
        if not text.strip() or used + len(line) > budget_chars:
            continue
        lines.append(line)
        used += len(line) + 1
    return HEADER + "\n" + "\n".join(lines) if lines else None


def extract_schema(max_facts: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "facts": {"type": "array", "items": {"type": "string"}, "maxItems": max_facts}
        },
        "required": ["facts"],
        "additionalProperties": False,
    }


def resolve_schema(ids: Sequence[int]) -> dict[str, Any]:
    """The resolution answer; `id` is limited to the candidates shown, or null."""
    return {
        "type": "object",
        "properties": {
            "event": {"type": "string", "enum": list(EVENTS)},
            "id": {"anyOf": [{"type": "integer", "enum": list(ids)}, {"type": "null"}]},
            "text": {"type": "string"},
        },
        "required": ["event", "id", "text"],
        "additionalProperties": False,
    }


def parse_resolution(data: Any, shown: Mapping[int, Entry]) -> Resolution:
    """Validate an answer against the candidates shown; ResolutionError says what is wrong."""
    if not isinstance(data, dict):
        raise ResolutionError(f"expected a JSON object, got {_brief(data)}")
    event = str(data.get("event", "")).upper()
    if event not in EVENTS:
        raise ResolutionError(f"event must be one of {', '.join(EVENTS)}, got {_brief(event)}")
    raw_id, text = data.get("id"), data.get("text") or ""
    if not isinstance(text, str):
        raise ResolutionError(f"text must be a string, got {_brief(text)}")
    entry_id: int | None = None
    if event in ("UPDATE", "DELETE"):
        if isinstance(raw_id, bool) or not isinstance(raw_id, int) or raw_id not in shown:
            raise ResolutionError(
                f"{event} needs the id of a fact shown ({', '.join(map(str, shown))}), "
                f"got {_brief(raw_id)}"
            )
        entry_id = raw_id
    return Resolution(event=event, id=entry_id, text=" ".join(text.split()))


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def _brief(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _transcript(turn: Turn) -> str:
    """The turn as text, each tool result cut to its head (what matters, in a small prompt)."""
    messages: list[Message] = []
    for message in turn.messages:
        if message.get("role") == "tool":
            content = message.get("content")
            if not isinstance(content, str):
                content = json.dumps(content, ensure_ascii=False, default=str)
            if len(content) > TOOL_RESULT_LIMIT:
                omitted = len(content) - TOOL_RESULT_LIMIT
                content = f"{content[:TOOL_RESULT_LIMIT]} [... {omitted} chars omitted]"
            message = {**message, "content": content}
        messages.append(message)
    return Turn(messages=messages).render()


def _messages(name: str, **values: Any) -> list[Message]:
    """A prompt file's `system` block (static, so llama.cpp reuses it as a cached prefix)
    and its `user` block (this call's data) as chat messages."""
    template = prompt_environment(PROMPTS_DIR).get_template(f"{name}.j2")
    context = template.new_context(values)
    return [
        {"role": role, "content": "".join(template.blocks[role](context)).strip()}
        for role in ("system", "user")
    ]
