"""Edit operations: exact-once anchors, precise insertion, untouched bytes identical."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from reference_memory import SKELETON, EditError, EditOp, apply_ops
from reference_memory.document import count

BASE = "## Goals\n- ship v2\n\n## Assets\n- Dataset a1\n- Dataset a2\n"


def test_add_after_a_heading_becomes_the_next_line() -> None:
    out = apply_ops(
        SKELETON, [{"op": "add", "anchor": "## Conventions", "text": "- [user] 70 rows"}]
    )
    assert "## Conventions\n- [user] 70 rows\n\n## Interaction corrections\n" in out
    assert out.replace("- [user] 70 rows\n", "", 1) == SKELETON


def test_add_anchor_inside_a_line_inserts_after_that_whole_line() -> None:
    out = apply_ops(BASE, [EditOp.add("Dataset a1", "- Dataset a3")])
    assert out == BASE.replace("- Dataset a1\n", "- Dataset a1\n- Dataset a3\n")


def test_add_anchor_ending_with_a_line_break_inserts_at_the_next_line() -> None:
    out = apply_ops(BASE, [EditOp.add("- ship v2\n", "- ship v3\n\n")])
    assert out == BASE.replace("- ship v2\n", "- ship v2\n- ship v3\n")


def test_add_on_a_last_line_without_line_break() -> None:
    assert apply_ops("## A\n- x", [EditOp.add("- x", "- y")]) == "## A\n- x\n- y"


def test_replace_and_delete() -> None:
    out = apply_ops(BASE, [EditOp.replace("ship v2", "ship v3")])
    assert out == BASE.replace("ship v2", "ship v3")
    # deleting a whole line takes its line break, leaving no blank line
    assert apply_ops(BASE, [EditOp.replace("- Dataset a1", "")]) == BASE.replace(
        "- Dataset a1\n", ""
    )
    # deleting part of a line removes just that part
    assert apply_ops(BASE, [EditOp.replace(" a2", "")]) == BASE.replace(" a2", "")


def test_ops_apply_in_order_each_to_the_previous_result() -> None:
    out = apply_ops(
        BASE,
        [EditOp.add("## Assets", "- Dataset a0"), EditOp.replace("- Dataset a0", "- Dataset z")],
    )
    assert "## Assets\n- Dataset z\n- Dataset a1" in out


def test_anchor_not_found_names_the_op_index() -> None:
    with pytest.raises(EditError, match=r"^op 1: anchor not found: '## Nope'$") as info:
        apply_ops(BASE, [EditOp.add("## Goals", "- g"), EditOp.add("## Nope", "- x")])
    assert (info.value.index, info.value.reason) == (1, "anchor not found: '## Nope'")


def test_anchor_found_twice_names_the_count() -> None:
    with pytest.raises(EditError, match=r"^op 0: anchor found 2 times \(must occur exactly once\)"):
        apply_ops(BASE, [{"op": "add", "anchor": "- Dataset a", "text": "- x"}])
    with pytest.raises(EditError, match=r"^op 0: old found 2 times"):
        apply_ops(BASE, [EditOp.replace("Dataset", "Set")])
    with pytest.raises(EditError, match=r"^op 0: old not found"):
        apply_ops(BASE, [EditOp.replace("absent", "x")])


def test_overlapping_occurrences_count_as_many() -> None:
    assert count("aaa", "aa") == 2
    with pytest.raises(EditError, match="found 2 times"):
        apply_ops("- aaa\n", [EditOp.add("aa", "- b")])


@pytest.mark.parametrize(
    ("op", "message"),
    [
        ({"op": "delete", "old": "x"}, "op 0: unknown op 'delete' (valid: 'add', 'replace')"),
        ({"op": "add", "text": "x"}, "op 0: add needs a string 'anchor', got nothing"),
        (
            {"op": "replace", "old": "## Goals", "new": 3},
            "op 0: replace needs a string 'new', got int",
        ),
        (["add"], "op 0: expected an object with an 'op' field, got list"),
        ({"op": "add", "anchor": "  ", "text": "x"}, "op 0: anchor is empty"),
        ({"op": "add", "anchor": "## Goals", "text": "\n"}, "op 0: add has empty text"),
    ],
)
def test_malformed_ops_are_named(op: object, message: str) -> None:
    with pytest.raises(EditError) as info:
        apply_ops(BASE, [op])  # type: ignore[list-item]
    assert str(info.value) == message


def test_a_failing_batch_leaves_the_input_untouched() -> None:
    text = BASE
    with pytest.raises(EditError):
        apply_ops(text, [EditOp.add("## Goals", "- g"), EditOp.add("## Nope", "- x")])
    assert text == BASE


def test_to_dict_round_trips() -> None:
    for op in (EditOp.add("## Goals", "- g"), EditOp.replace("a", "")):
        assert EditOp.from_dict(op.to_dict()) == op
    assert EditOp.add("a", "b").to_dict() == {"op": "add", "anchor": "a", "text": "b"}


_line = st.text(alphabet="abc -[]#\t", min_size=0, max_size=12)
_lines = st.lists(_line, min_size=1, max_size=12)


@given(_lines, st.data(), st.text(alphabet="xyz -", min_size=1, max_size=20))
def test_add_only_inserts(lines: list[str], data: st.DataObject, new: str) -> None:
    text = "\n".join(lines) + data.draw(st.sampled_from(["", "\n"]))
    start = data.draw(st.integers(0, max(0, len(text) - 1)))
    anchor = text[start : start + data.draw(st.integers(1, 8))]
    assume(anchor.strip() and count(text, anchor) == 1)
    assume(new.strip())
    out = apply_ops(text, [EditOp.add(anchor, new)])
    inserted = len(out) - len(text)
    # the insertion point is the end of the line on which the anchor ends, never inside a line
    end = text.index(anchor) + len(anchor)
    if text[end - 1] == "\n":
        point, segment = end, new.rstrip("\r\n") + "\n"
    else:
        point = text.find("\n", end) if "\n" in text[end:] else len(text)
        segment = "\n" + new.rstrip("\r\n")
    # every byte outside the one inserted segment is identical
    assert out == text[:point] + segment + text[point:]
    assert inserted == len(segment)


@given(_lines, st.data(), st.text(alphabet="xyz -\n", max_size=20))
def test_replace_only_touches_old(lines: list[str], data: st.DataObject, new: str) -> None:
    text = "\n".join(lines) + "\n"
    start = data.draw(st.integers(0, len(text) - 1))
    old = text[start : start + data.draw(st.integers(1, 8))]
    assume(old.strip() and count(text, old) == 1)
    out = apply_ops(text, [EditOp.replace(old, new)])
    i = text.index(old)
    end = i + len(old)
    if new == "" and (i == 0 or text[i - 1] == "\n") and text[end : end + 1] == "\n":
        end += 1
    assert out == text[:i] + new + text[end:]
