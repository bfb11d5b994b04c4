"""Edit operations on the memory file: `add` after a unique anchor, `replace` a unique span.

The updater never rewrites the file; it emits these operations and `apply_ops` applies them in
order, each against the text left by the previous one. Bytes an operation does not touch stay
identical.

Rules, precisely:
- `add(anchor, text)`: `anchor` must occur exactly once. `text` (trailing line breaks removed)
  goes in as whole line(s) right after the line on which the anchor ends: if the anchor ends
  with a line break, the text is inserted at the start of the next line, followed by a line
  break; otherwise a line break then the text are inserted at the end of that line. A bullet
  added after a heading or another bullet therefore becomes the next line, and no existing
  line is ever split.
- `replace(old, new)`: `old` must occur exactly once and is swapped for `new`. `new == ""`
  deletes; deleting whole line(s) also removes the line break that ended them, so no blank
  line is left behind.
Operations are numbered from 0, as in the list; an `EditError` names the number and the reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from reference_memory.document import count

OpKind = Literal["add", "replace"]
_FIELDS: dict[str, tuple[str, str]] = {"add": ("anchor", "text"), "replace": ("old", "new")}


class EditError(ValueError):
    """An operation cannot be applied; the message reads `op N: reason`."""

    def __init__(self, index: int, reason: str) -> None:
        super().__init__(f"op {index}: {reason}")
        self.index = index
        self.reason = reason


@dataclass(frozen=True)
class EditOp:
    """One edit: `add` uses anchor/text, `replace` uses old/new."""

    op: OpKind
    anchor: str = ""
    text: str = ""
    old: str = ""
    new: str = ""

    @classmethod
    def add(cls, anchor: str, text: str) -> EditOp:
        return cls("add", anchor=anchor, text=text)

    @classmethod
    def replace(cls, old: str, new: str) -> EditOp:
        return cls("replace", old=old, new=new)

    @classmethod
    def from_dict(cls, data: Any, index: int = 0) -> EditOp:
        """Validate one operation as a model or a caller wrote it; EditError names what is wrong."""
        if isinstance(data, EditOp):
            return data
        if not isinstance(data, Mapping):
            raise EditError(index, f"expected an object with an 'op' field, got {_kind(data)}")
        kind = data.get("op")
        if kind not in _FIELDS:
            raise EditError(index, f"unknown op {kind!r} (valid: 'add', 'replace')")
        target, payload = _FIELDS[kind]
        values = {}
        for name in (target, payload):
            value = data.get(name)
            if not isinstance(value, str):
                raise EditError(index, f"{kind} needs a string '{name}', got {_kind(value)}")
            values[name] = value
        return cls(kind, **values)

    def to_dict(self) -> dict[str, str]:
        target, payload = _FIELDS[self.op]
        return {"op": self.op, target: getattr(self, target), payload: getattr(self, payload)}

    @property
    def new_text(self) -> str:
        """The text this operation brings into the file (what the safety gate must check)."""
        return self.text if self.op == "add" else self.new


def parse_ops(ops: Iterable[Any]) -> list[EditOp]:
    """Validate a batch (dicts or EditOps) without applying it."""
    return [EditOp.from_dict(op, i) for i, op in enumerate(ops)]


def apply_ops(text: str, ops: Iterable[Mapping[str, Any] | EditOp]) -> str:
    """Apply a batch in order; raises EditError for the first operation that cannot apply."""
    for i, op in enumerate(ops):
        text = apply_op(text, EditOp.from_dict(op, i), i)
    return text


def apply_op(text: str, op: EditOp, index: int = 0) -> str:
    """Apply one operation; `index` only labels the error."""
    if op.op == "add":
        start = _locate(text, op.anchor, "anchor", index)
        return _insert_after(text, start + len(op.anchor), op.text, index)
    start = _locate(text, op.old, "old", index)
    end = start + len(op.old)
    if op.new == "" and _is_line_start(text, start) and text[end : end + 1] == "\n":
        end += 1  # deleting whole lines takes their final line break too
    return text[:start] + op.new + text[end:]


def _locate(text: str, needle: str, name: str, index: int) -> int:
    if not needle.strip():
        raise EditError(index, f"{name} is empty")
    n = count(text, needle)
    if n == 0:
        raise EditError(index, f"{name} not found: {_quote(needle)}")
    if n > 1:
        raise EditError(
            index, f"{name} found {n} times (must occur exactly once): {_quote(needle)}"
        )
    return text.index(needle)


def _insert_after(text: str, end: int, new: str, index: int) -> str:
    body = new.rstrip("\r\n")
    if not body.strip():
        raise EditError(index, "add has empty text")
    if end > 0 and text[end - 1] == "\n":
        return text[:end] + body + "\n" + text[end:]
    line_end = text.find("\n", end)
    if line_end == -1:
        line_end = len(text)
    return text[:line_end] + "\n" + body + text[line_end:]


def _is_line_start(text: str, pos: int) -> bool:
    return pos == 0 or text[pos - 1] == "\n"


def _quote(s: str, limit: int = 120) -> str:
    return repr(s if len(s) <= limit else s[:limit] + "…")


def _kind(value: Any) -> str:
    return "nothing" if value is None else type(value).__name__
