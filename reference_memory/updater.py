"""Step 2: turn what happened into edit operations on the file.

`UpdaterStrategy` is the extension point: a strategy gets the file, the turn and (when it asks
for one) the summary, and returns operations that apply to the file in order. This module ships
the `ops` strategy: the updater model answers a JSON op list; a batch with any bad anchor (or
any operation that would break the six-section skeleton) is rejected whole and the model is
asked again with the exact error, 3 attempts in all (fewer when the model repeats a failed
answer word for word: it would again).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from reference_memory.calls import Caller, ModelCallError
from reference_memory.document import HEADINGS, missing_sections, unique_lines
from reference_memory.edits import EditError, EditOp, apply_op
from reference_memory.model import Message
from reference_memory.report import Attempt, UpdateReport
from reference_memory.templates import render
from reference_memory.turn import Turn


@dataclass(frozen=True)
class UpdateInput:
    """What a strategy works from."""

    file: str
    turn: Turn
    summary: str | None = None


class UpdaterGaveUp(Exception):
    """No valid batch after every attempt. `answered` is False when the model never answered."""

    def __init__(self, message: str, *, answered: bool) -> None:
        super().__init__(message)
        self.answered = answered


@runtime_checkable
class UpdaterStrategy(Protocol):
    name: str
    uses_summary: bool  # False lets the pipeline skip the summarizer call

    async def propose(self, job: UpdateInput, caller: Caller, report: UpdateReport) -> list[EditOp]:
        """Ops that apply to `job.file` in order (`[]`: nothing to keep); records attempts in
        `report.attempts`; raises UpdaterGaveUp when it cannot produce a valid batch."""
        ...


def check_batch(file: str, ops: list[EditOp]) -> str:
    """Apply a batch in order, also rejecting any op that removes or reorders a section heading.

    Returns the edited file; raises EditError naming the first bad op.
    """
    text = file
    intact = not missing_sections(file)
    for i, op in enumerate(ops):
        text = apply_op(text, op, i)
        lost = missing_sections(text) if intact else []
        if lost:
            raise EditError(i, f"removes or reorders the section heading '## {lost[0]}'")
    return text


def ops_schema(file: str | None = None) -> dict[str, Any]:
    """JSON schema of `{"ops": [...]}`; given the file, `anchor`/`old` are limited to its lines."""
    anchor: dict[str, Any] = {"type": "string"}
    old: dict[str, Any] = {"type": "string"}
    if file is not None:
        lines = unique_lines(file)
        anchor = {"type": "string", "enum": lines}
        editable = [line for line in lines if line not in HEADINGS]
        old = {"type": "string", "enum": editable} if editable else {"type": "string"}
    add = _op_schema("add", {"anchor": anchor, "text": {"type": "string"}})
    replace = _op_schema("replace", {"old": old, "new": {"type": "string"}})
    return {
        "type": "object",
        "properties": {"ops": {"type": "array", "items": {"anyOf": [add, replace]}}},
        "required": ["ops"],
        "additionalProperties": False,
    }


def parse_answer(data: Any) -> list[EditOp]:
    """`{"ops": [...]}` (or a bare list) into EditOps; EditError names the first malformed op."""
    if isinstance(data, dict) and set(data) == {"ops"}:
        data = data["ops"]
    if not isinstance(data, list):
        raise ValueError('expected {"ops": [...]}')
    return [EditOp.from_dict(item, i) for i, item in enumerate(data)]


class OpsUpdater:
    """The `ops` strategy: the model writes the edit operations itself."""

    name = "ops"
    uses_summary = True
    role = "updater"

    def __init__(self, *, attempts: int = 3, constrain_anchors: bool = False) -> None:
        if attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {attempts}")
        self.attempts = attempts
        self.constrain_anchors = constrain_anchors

    def messages(self, job: UpdateInput) -> list[Message]:
        summary = job.summary if job.summary is not None else job.turn.render()
        return [
            {"role": "system", "content": render("updater_system")},
            {"role": "user", "content": render("updater_user", file=job.file, summary=summary)},
        ]

    async def propose(self, job: UpdateInput, caller: Caller, report: UpdateReport) -> list[EditOp]:
        messages = self.messages(job)
        schema = ops_schema(job.file if self.constrain_anchors else None)
        answered = False
        for number in range(1, self.attempts + 1):
            attempt = Attempt(number=number)
            report.attempts.append(attempt)
            try:
                completion, data = await caller.json(self.role, messages, schema)
                attempt.raw = completion.text
                answered = True
                attempt.ops = _raw_ops(data)
                ops = parse_answer(data)
                check_batch(job.file, ops)
                return ops
            except ModelCallError as exc:
                attempt.raw = exc.raw
                attempt.error = exc.reason
                answered = answered or bool(exc.raw)
            except (EditError, ValueError) as exc:
                attempt.error = str(exc)
            if _repeats_itself(report.attempts):
                break
            if attempt.raw:  # keep the conversation so the retry sees its own answer
                messages = [*messages, {"role": "assistant", "content": attempt.raw}]
            retry = render("updater_retry", error=attempt.error)
            messages = [*messages, {"role": "user", "content": retry}]
        last = report.attempts[-1].error
        tried = len(report.attempts)
        why = (
            " (the same answer twice: asking again would repeat it)"
            if tried < self.attempts
            else ""
        )
        raise UpdaterGaveUp(
            f"updater gave up after {tried} attempts{why}; last error: {last}", answered=answered
        )


def _op_schema(kind: str, fields: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"op": {"type": "string", "enum": [kind]}, **fields},
        "required": ["op", *fields],
        "additionalProperties": False,
    }


def _repeats_itself(attempts: list[Attempt]) -> bool:
    """The last two attempts failed with the very same answer despite the error feedback.

    Deterministic decoding (temperature 0, as every embedded run uses) then answers the same
    again: in an embedded combined run all 23 rejected turns were three identical answers,
    the third costing ~40 s each. Stopping here would have changed none of those outcomes."""
    if len(attempts) < 2:
        return False
    last, before = attempts[-1], attempts[-2]
    return bool(last.raw) and last.raw == before.raw and last.error == before.error


def _raw_ops(data: Any) -> list[dict[str, Any]] | None:
    items = data.get("ops") if isinstance(data, dict) else data
    if isinstance(items, list) and all(isinstance(item, dict) for item in items):
        return items
    return None
