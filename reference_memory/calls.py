"""Every model call the pipeline makes goes through `Caller`: timed, bounded, recorded.

A call that raises, times out, is cut off at `max_tokens`, comes back empty, or (when JSON was
asked for) does not parse is a failed call: it is recorded in the update report with its error
and surfaces as `ModelCallError`, which each step turns into its own outcome.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from reference_memory.model import Completion, Message, ModelsArg, model_for
from reference_memory.report import CallRecord, UpdateReport

DEFAULT_MAX_TOKENS = {"summarizer": 300, "updater": 1024, "safety": 120, "compactor": 2560}
"""Room for a complete answer per role: JSON cut off mid-way is a failed call."""

_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n(.*?)\n?```\s*$", re.DOTALL)


class ModelCallError(Exception):
    """A model call failed; `raw` holds whatever text came back (for JSON parse failures)."""

    def __init__(self, role: str, reason: str, raw: str = "") -> None:
        super().__init__(f"{role} call failed: {reason}")
        self.role = role
        self.reason = reason
        self.raw = raw


class Caller:
    """Calls the model serving a role and appends a `CallRecord` to the report for each call."""

    def __init__(
        self,
        models: ModelsArg,
        report: UpdateReport,
        *,
        timeout_s: float | None = 180.0,
        max_tokens: Mapping[str, int] | None = None,
    ) -> None:
        self.models = models
        self.report = report
        self.timeout_s = timeout_s
        self.max_tokens = {**DEFAULT_MAX_TOKENS, **(max_tokens or {})}

    async def text(self, role: str, messages: Sequence[Message]) -> Completion:
        """A free-text answer; empty text counts as a failure."""
        return await self._call(role, messages, None)

    async def json(
        self, role: str, messages: Sequence[Message], schema: Mapping[str, Any]
    ) -> tuple[Completion, Any]:
        """A JSON answer under `schema` (enforced by back ends that can; parsed here either way)."""
        completion = await self._call(role, messages, schema)
        try:
            return completion, parse_json(completion.text)
        except ValueError as exc:
            reason = f"answer is not valid JSON ({exc})"
            self.report.calls[-1].error = reason
            raise ModelCallError(role, reason, completion.text) from None

    async def _call(
        self, role: str, messages: Sequence[Message], schema: Mapping[str, Any] | None
    ) -> Completion:
        record = CallRecord(role=role)
        self.report.calls.append(record)
        started = time.perf_counter()
        try:
            model = model_for(self.models, role)
            record.model = str(getattr(model, "name", "") or type(model).__name__)
            request = model.complete(messages, schema=schema, max_tokens=self.max_tokens.get(role))
            completion = await asyncio.wait_for(request, self.timeout_s)
        except TimeoutError:
            record.latency_s = time.perf_counter() - started
            record.error = f"timed out after {self.timeout_s:g}s"
            raise ModelCallError(role, record.error) from None
        except Exception as exc:
            record.latency_s = time.perf_counter() - started
            record.error = f"{type(exc).__name__}: {exc}"
            record.cached = bool(getattr(exc, "cached", False))  # a failure a cache replayed
            raise ModelCallError(role, record.error) from exc
        record.latency_s = completion.latency_s or (time.perf_counter() - started)
        record.model = completion.model or record.model
        record.prompt_tokens = completion.prompt_tokens
        record.completion_tokens = completion.completion_tokens
        record.cached = completion.cached
        if completion.extra.get("finish_reason") == "length":
            record.error = "answer cut off at max_tokens"
        elif not (completion.text or "").strip():
            record.error = "empty answer"
        if record.error:
            raise ModelCallError(role, record.error, completion.text or "")
        return completion


def parse_json(text: str) -> Any:
    """Parse a JSON answer, tolerating one surrounding markdown code fence and raw control
    characters (a literal newline) inside strings, which grammar-constrained local models emit."""
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    return json.loads(stripped, strict=False)


def strip_fence(text: str) -> str:
    """Remove one markdown code fence wrapped around a whole answer, if present."""
    fenced = _FENCE.match(text.strip())
    return fenced.group(1) if fenced else text
