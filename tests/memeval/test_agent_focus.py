"""The lines of the memory that bear on a message."""

from __future__ import annotations

from memeval.agent_focus import (
    FOCUS_INTRO,
    MemoryLine,
    bearing_lines,
    focus_note,
    memory_lines,
    terms,
)

MEMORY = """Long-term memory from earlier sessions. It is below, between <memory> tags.

<memory>
## User Profile
- Prefers short answers.

## Projects
### agent-prod
- Summarize span hallucination rate is 12%; goal is under 8% by end of Q3.
- Eval dataset ds_42 has 70 rows.
### legal-rag
- Retriever v3 hit rate 0.566 on the golden set.
- Reranker bar is 0.90.

## Decisions
- Use the 1.5B model for the judge.
</memory>
"""


def test_terms_split_joined_names_and_keep_them_whole() -> None:
    found = terms("What about agent-prod and span_name?")
    assert {"agent-prod", "agent", "prod", "span", "name"} <= found


def test_memory_lines_carry_their_headings_and_ignore_text_outside_the_tags() -> None:
    lines = memory_lines(MEMORY)
    assert lines[0] == MemoryLine("User Profile", "Prefers short answers.")
    assert MemoryLine("Projects › legal-rag", "Reranker bar is 0.90.") in lines
    assert lines[-1] == MemoryLine("Decisions", "Use the 1.5B model for the judge.")
    assert not any("earlier sessions" in line.text for line in lines)


def test_a_file_without_tags_is_read_whole() -> None:
    assert memory_lines("## Goals\n- Ship v2.\n") == [MemoryLine("Goals", "Ship v2.")]


def test_the_heading_names_the_line_a_message_asks_about() -> None:
    picked = bearing_lines(MEMORY, "What hit rate did legal-rag's retriever reach?")
    assert picked[0] == MemoryLine(
        "Projects › legal-rag", "Retriever v3 hit rate 0.566 on the golden set."
    )
    assert all(line.place.endswith("legal-rag") for line in picked)


def test_weak_matches_are_dropped_and_the_limit_holds() -> None:
    picked = bearing_lines(MEMORY, "How many rows does the agent-prod eval dataset have?", limit=1)
    assert picked == [MemoryLine("Projects › agent-prod", "Eval dataset ds_42 has 70 rows.")]
    everything = bearing_lines(MEMORY, "agent-prod legal-rag", limit=10)
    assert len(everything) == 4  # the four project lines, none of the others
    assert [line.text for line in everything] == [
        line.text for line in memory_lines(MEMORY) if line.place.startswith("Projects")
    ]  # file order


def test_no_note_without_memory_or_a_shared_word() -> None:
    assert focus_note(None, "hello") is None
    assert focus_note(MEMORY, "Thanks, bye!") is None


def test_the_note_groups_lines_under_their_place() -> None:
    note = focus_note(MEMORY, "Which reranker bar did we set for legal-rag?")
    assert note is not None and note.startswith(FOCUS_INTRO)
    assert note.count("Projects › legal-rag:") == 1  # one place line for its two lines
    assert note.endswith(
        "Projects › legal-rag:\n- Retriever v3 hit rate 0.566 on the golden "
        "set.\n- Reranker bar is 0.90."
    )
    assert "agent-prod" not in note
