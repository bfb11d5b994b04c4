"""The file diff: line changes, collapsed context, and character marks on edited lines."""

from __future__ import annotations

from memeval.report.diff import file_diff

BEFORE = "".join(f"line {i}\n" for i in range(20))


def test_unchanged_file_has_no_lines() -> None:
    d = file_diff(BEFORE, BEFORE)
    assert not d.changed
    assert d.lines == []


def test_added_and_removed_lines_are_counted_and_numbered() -> None:
    after = BEFORE.replace("line 3\n", "").replace("line 15\n", "line 15\nnew line\n")
    d = file_diff(BEFORE, after)
    assert (d.added, d.removed) == (1, 1)
    removed = [line for line in d.lines if line.kind == "del"]
    added = [line for line in d.lines if line.kind == "add"]
    assert [(line.text, line.old_no) for line in removed] == [("line 3", 4)]
    assert [(line.text, line.new_no) for line in added] == [("new line", 16)]


def test_distant_changes_collapse_into_hunks_with_context() -> None:
    after = BEFORE.replace("line 1\n", "line one\n").replace("line 18\n", "line eighteen\n")
    d = file_diff(BEFORE, after, context=2)
    gaps = [line for line in d.lines if line.kind == "gap"]
    assert len(gaps) == 1  # the two changes are far apart: one gap between the hunks
    context = [line.text for line in d.lines if line.kind == "ctx"]
    assert "line 10" not in context
    assert {"line 0", "line 2", "line 3", "line 16", "line 17", "line 19"} <= set(context)


def test_an_edited_line_marks_only_the_changed_characters() -> None:
    before = "- [user] Datasets have exactly 70 rows.\n"
    after = "- [user] Datasets have exactly 80 rows.\n"
    d = file_diff(before, after)
    old, new = (line for line in d.lines if line.kind in ("del", "add"))
    assert [s.text for s in old.segments if s.changed] == ["7"]
    assert [s.text for s in new.segments if s.changed] == ["8"]
    assert "".join(s.text for s in new.segments) == after.strip()


def test_a_rewritten_line_is_not_marked_character_by_character() -> None:
    d = file_diff("alpha beta gamma\n", "completely different words\n")
    assert all(not line.segments for line in d.lines)
