"""`core-search`: an always-loaded core file within a small budget plus a searchable archive.

The core is the reference pipeline (`FileMemory`) whose compactor works toward `core_budget`
instead of the file cap. Whatever leaves the core (lines an edit replaced or deleted, lines
compaction cut) and each turn's summary go into an FTS5/BM25 archive, so long-tail facts stay
findable: through a `search_memory` tool (mode "tool") or as top-k notes injected for the
user's message (mode "inject"). The snapshot is the core followed by the archive, so fact
tracking and write checks see everything the system stored.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from memeval.errors import ConfigError
from memeval.systems.base import MemoryKey, MemoryTool
from memeval.systems.fact_store import Entry, FactStore
from reference_memory import CAP, SKELETON, Compactor, FileMemory
from reference_memory.calls import Caller
from reference_memory.model import MemoryModel
from reference_memory.report import SafetyVerdict, Status, UpdateReport
from reference_memory.turn import Turn

log = logging.getLogger("memeval.systems.core_search")

Mode = Literal["tool", "inject"]
NAMES: Mapping[str, str] = {"tool": "core-search", "inject": "core-search-inject"}
TOOL_NAME = "search_memory"
HINT = (
    "Older details that are not in this memory file (facts it no longer holds, summaries of "
    f"earlier turns) can be found with the {TOOL_NAME} tool."
)
NOTES_HEADER = (
    "Older notes about this user, found by searching the memory archive for this message "
    "(they may be outdated: where they disagree with the memory file above, the file wins):"
)
ARCHIVE_HEADING = "## Archive (searchable, not loaded)"
LINE_KIND, TURN_KIND = "archive", "turn"
# the core processed the turn normally; after any other outcome nothing is archived (a
# blocked or failed turn's summary may carry exactly what the gate or the updater refused)
ARCHIVING = frozenset({Status.WRITTEN.value, Status.UNCHANGED.value})
NOTHING = "nothing worth remembering"  # the summarizer's answer for an empty turn
BULLETS = ("- ", "* ", "+ ")

TOOL_SPEC: Mapping[str, Any] = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": (
            "Search older notes about this user that are no longer in the memory file: facts "
            "it used to hold and summaries of earlier turns. Returns the best matches for the "
            "words of the query."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "Words to look for: a name, a dataset, a topic.",
                }
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    },
}


class CoreSearchMemory:
    """A budgeted core file the agent always sees, and an archive it reaches by search."""

    def __init__(
        self,
        models: Mapping[str, MemoryModel],
        store: Any,
        archive: FactStore,
        *,
        mode: Mode = "tool",
        core_budget: int = 4000,
        k: int = 5,
        budget_chars: int = 1500,
        gate_summaries: bool = True,
        **file_options: Any,
    ) -> None:
        _check_options(mode, core_budget, k, budget_chars, file_options)
        self.name = NAMES[mode]
        self.mode = mode
        self.core_budget, self.k, self.budget_chars = core_budget, k, budget_chars
        self.gate_summaries = gate_summaries
        self.store = store
        self.archive = archive
        # the run's compactor strategy, its thresholds scaled to the core budget
        given = file_options.pop("compactor", None)
        kind = type(given) if isinstance(given, Compactor) else Compactor
        self.core = FileMemory(
            models, store, compactor=core_compactor(core_budget, kind), **file_options
        )
        self._locks: dict[MemoryKey, asyncio.Lock] = {}

    async def context(self, key: MemoryKey) -> str | None:
        core = await self.core.context(key.user, key.space)
        return f"{core}\n\n{HINT}" if self.mode == "tool" else core

    async def context_for(self, key: MemoryKey, query: str) -> str | None:
        if self.mode != "inject":
            return await self.context(key)
        core = await self.core.context(key.user, key.space)
        hits = await asyncio.to_thread(self.archive.search, key, query, self.k)
        notes = fit_notes(hits, self.budget_chars)
        return f"{core}\n\n{notes}" if notes else core

    def memory_tools(self, key: MemoryKey) -> Sequence[MemoryTool]:
        if self.mode != "tool":
            return ()
        return (MemoryTool(spec=TOOL_SPEC, call=lambda args: self._search_tool(key, args)),)

    async def observe(self, key: MemoryKey, turn: Turn) -> UpdateReport:
        """The core's update, then what left the core and the turn's summary into the archive.
        The core's report comes back with the summary gate's call and verdict, and with
        file_before/file_after widened to the whole memory (core and archive, as `snapshot`
        gives it), read under the key's lock so no other update of the key slips between."""
        async with self._locks.setdefault(key, asyncio.Lock()):
            before = await self.snapshot(key)
            report = await self.core.update(key.user, key.space, turn)
            if report.status in ARCHIVING:
                try:
                    await self._archive(key, report)
                except Exception as exc:  # the turn is learned; a lost archive entry is not fatal
                    report.errors.append(f"archive: {type(exc).__name__}: {exc}")
                    log.warning("archiving for (%r, %r) failed: %s", key.user, key.space, exc)
            report.file_before, report.file_after = before, await self.snapshot(key)
        return report

    async def snapshot(self, key: MemoryKey) -> str:
        core = await asyncio.to_thread(self.store.get, key.user, key.space)
        entries = await asyncio.to_thread(self.archive.entries, key)
        return join_snapshot(core, [entry.text for entry in entries])

    async def restore(
        self, key: MemoryKey, snapshot: str, turns: Sequence[tuple[str, Turn]]
    ) -> None:
        """Continue from a snapshot: its core goes back into the store (as a new version when
        it differs) and the archive is made to hold exactly its entries, in order."""
        core, texts = split_snapshot(snapshot)
        if await asyncio.to_thread(self.store.get, key.user, key.space) != core:
            await asyncio.to_thread(self.store.put, key.user, key.space, core)
        await asyncio.to_thread(self._restore_archive, key, texts)

    def settings(self) -> Mapping[str, Any]:
        return {
            "mode": self.mode,
            "core_budget": self.core_budget,
            "k": self.k,
            "budget_chars": self.budget_chars,
            "ranking": "fts5-bm25",
            "gate_summaries": self.gate_summaries,
        }

    def close(self) -> None:
        try:
            self.core.close()
        finally:
            self.archive.close()

    async def _archive(self, key: MemoryKey, report: UpdateReport) -> None:
        known = {entry.text for entry in await asyncio.to_thread(self.archive.entries, key)}
        for text, source in cut_lines(report):
            if text not in known:
                known.add(text)
                await asyncio.to_thread(self.archive.add, key, text, kind=LINE_KIND, source=source)
        summary = summary_text(report.summary)
        if summary is None or summary in known:
            return
        if self.gate_summaries and not await self._allowed(summary, report):
            return
        await asyncio.to_thread(self.archive.add, key, summary, kind=TURN_KIND, source="summary")

    async def _allowed(self, summary: str, report: UpdateReport) -> bool:
        """The core's safety gate on the summary: the pipeline only judged the ops' text, and
        archived notes reach the agent's context as the file does. Recorded in the report."""
        core = self.core
        caller = Caller(
            core.model, report, timeout_s=core.call_timeout_s, max_tokens=core.max_tokens
        )
        try:
            verdict = await core.safety.check(summary, caller)
        except (
            Exception
        ) as exc:  # an undecided gate archives nothing, as the pipeline writes nothing
            report.safety.append(SafetyVerdict(summary, "error", str(exc)))
            report.errors.append(f"archive: safety gate unavailable for the turn summary: {exc}")
            return False
        report.safety.append(SafetyVerdict(summary, verdict.verdict, verdict.reason))
        if not verdict.allowed:
            report.blocked.append(summary)
        return verdict.allowed

    def _search_tool(self, key: MemoryKey, args: Mapping[str, Any]) -> dict[str, Any]:
        query = args.get("query") if isinstance(args, Mapping) else None
        if not isinstance(query, str) or not query.strip():
            return {"error": "give a non-empty 'query': the words to search the archive for"}
        try:
            hits = self.archive.search(key, query, self.k)
        except Exception as exc:  # a tool never raises: the agent sees the error instead
            return {"error": f"search failed: {type(exc).__name__}: {exc}"}
        if not hits:
            return {"results": [], "note": "nothing found"}
        return {"results": [hit.text for hit in hits]}

    def _restore_archive(self, key: MemoryKey, texts: list[str]) -> None:
        current = self.archive.entries(key)
        if [entry.text for entry in current] == texts:
            return  # unchanged: keep kinds and sources the snapshot does not carry
        previous = {entry.text: entry for entry in current}
        self.archive.clear(key)
        for text in texts:
            old = previous.get(text)
            kind, source = (old.kind, old.source) if old else (LINE_KIND, "restore")
            self.archive.add(key, text, kind=kind, source=source)


def core_compactor(core_budget: int, kind: type[Compactor] = Compactor) -> Compactor:
    """Compaction scaled to the core budget as the file's 7,000/6,000/8,000 are to its cap."""
    return kind(
        trigger=round(core_budget * 7 / 8), target=round(core_budget * 3 / 4), cap=core_budget
    )


def cut_lines(report: UpdateReport) -> list[tuple[str, str]]:
    """(entry text, "edit" | "compaction") for each content line the update took out of the
    file; a line added this turn and cut by its compaction counts too."""
    after = set(_content_lines(report.file_after))
    compaction = report.compaction
    edited = report.file_after
    if compaction is not None and compaction.accepted and compaction.text_before:
        edited = compaction.text_before
    edited_lines = _content_lines(edited)
    still = after | set(edited_lines)  # lines an edit removed are gone from both
    cut = [(line, "edit") for line in _content_lines(report.file_before) if line not in still]
    cut += [(line, "compaction") for line in edited_lines if line not in after]
    seen: set[str] = set()
    result: list[tuple[str, str]] = []
    for line, source in cut:
        text = _entry_text(line)
        if text and text not in seen:
            seen.add(text)
            result.append((text, source))
    return result


def summary_text(summary: str | None) -> str | None:
    """The summary on one line, or None when there is nothing to keep."""
    text = " ".join((summary or "").split())
    if not text or text.casefold().rstrip(".") == NOTHING:
        return None
    return text


def fit_notes(hits: Sequence[Entry], budget_chars: int) -> str | None:
    """The header and the best-ranked hits whose lines fit in `budget_chars` together."""
    lines: list[str] = []
    used = 0
    for hit in hits:
        line = f"- {hit.text}"
        if used + len(line) + 1 <= budget_chars:
            lines.append(line)
            used += len(line) + 1
    return "\n".join([NOTES_HEADER, *lines]) if lines else None


def join_snapshot(core: str, texts: Sequence[str]) -> str:
    if not texts:
        return core
    head = core if core.endswith("\n") else core + "\n"
    return head + "\n" + ARCHIVE_HEADING + "\n" + "".join(f"- {text}\n" for text in texts)


def split_snapshot(snapshot: str) -> tuple[str, list[str]]:
    """(core file, archived entry texts) from `join_snapshot`'s text."""
    core, marker, tail = snapshot.rpartition("\n" + ARCHIVE_HEADING + "\n")
    if not marker:
        return snapshot, []
    texts = [line[2:].strip() for line in tail.splitlines() if line.startswith("- ")]
    return core, [text for text in texts if text]


def _content_lines(text: str) -> list[str]:
    """Non-blank, non-heading lines, stripped."""
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def _entry_text(line: str) -> str:
    """A file line as an archive entry: without its bullet (the snapshot adds its own)."""
    return line[2:].strip() if line.startswith(BULLETS) else line


def _check_options(
    mode: str, core_budget: int, k: int, budget_chars: int, file_options: Mapping[str, Any]
) -> None:
    if mode not in NAMES:
        raise ConfigError(f"core-search mode {mode!r} is not valid (valid: tool, inject)")
    if not len(SKELETON) < core_budget <= CAP:
        raise ConfigError(
            f"core-search core_budget {core_budget} must be over {len(SKELETON)} (the empty "
            f"file) and at most {CAP} (the store's cap)"
        )
    if k < 1 or budget_chars < 1:
        raise ConfigError(f"core-search k ({k}) and budget_chars ({budget_chars}) must be >= 1")
    given = file_options.get("compactor")
    if given is not None and not isinstance(given, Compactor):
        raise ConfigError(f"core-search compactor must be a Compactor, got {type(given).__name__}")
