"""The file's skeleton, limits and structure helpers."""

from __future__ import annotations

from reference_memory import CAP, SECTIONS, SKELETON, TARGET, TRIGGER
from reference_memory.document import (
    missing_sections,
    parse,
    section,
    section_sizes,
    unique_lines,
    user_lines,
)

FILE = """## User Profile
- [user] Dana leads ML evaluation at Acme

## Goals
### Book-summary quality
- [user] Target: 0.90 faithfulness before prod
- v2 scored 0.648 against the 0.90 target

## Projects
### agent-prod
- Production tracing project

## Assets
- Dataset agent-prod-sample (70 rows)

## Conventions
*   [USER] Datasets should have exactly 70 rows

## Interaction corrections
"""


def test_limits_are_the_design_numbers() -> None:
    assert (CAP, TRIGGER, TARGET) == (8000, 7000, 6000)


def test_skeleton_has_the_six_sections_in_order_and_nothing_else() -> None:
    assert [s.title for s in parse(SKELETON)] == list(SECTIONS)
    assert SKELETON.splitlines() == [
        "## User Profile", "", "## Goals", "", "## Projects", "", "## Assets", "",
        "## Conventions", "", "## Interaction corrections",
    ]  # fmt: skip
    assert missing_sections(SKELETON) == []
    assert user_lines(SKELETON) == []


def test_parse_finds_sections_subsections_and_exact_offsets() -> None:
    sections = parse(FILE)
    assert [s.title for s in sections] == list(SECTIONS)
    goals = sections[1]
    assert [s.title for s in goals.subsections] == ["Book-summary quality"]
    sub = goals.subsections[0]
    assert FILE[sub.start : sub.end].startswith("### Book-summary quality\n")
    assert sub.body.splitlines() == [
        "- [user] Target: 0.90 faithfulness before prod",
        "- v2 scored 0.648 against the 0.90 target",
        "",
    ]
    assert "".join(FILE[s.start : s.end] for s in sections) == FILE
    assert section(FILE, "projects") is sections[2] or section(FILE, "projects").title == "Projects"  # type: ignore[union-attr]
    assert section(FILE, "Nope") is None


def test_user_lines_are_tagged_bullets_only() -> None:
    assert user_lines(FILE) == [
        "- [user] Dana leads ML evaluation at Acme",
        "- [user] Target: 0.90 faithfulness before prod",
        "*   [USER] Datasets should have exactly 70 rows",
    ]
    assert user_lines("[user] not a bullet\n- mentions [user] later\n") == []


def test_section_sizes_cover_the_whole_file() -> None:
    sizes = section_sizes("preamble\n" + FILE)
    assert sizes[""] == len("preamble\n")
    assert sum(sizes.values()) == len(FILE) + len("preamble\n")
    assert sizes["Interaction corrections"] == len("## Interaction corrections\n")


def test_missing_sections_reports_absent_and_out_of_order_headings() -> None:
    assert missing_sections(FILE.replace("## Assets\n", "")) == ["Assets"]
    swapped = SKELETON.replace("## User Profile", "## X").replace("## Goals", "## User Profile")
    swapped = swapped.replace("## X", "## Goals")
    assert missing_sections(swapped) == ["Goals"]


def test_unique_lines_exclude_repeats_and_lines_contained_in_others() -> None:
    text = "## Assets\n- a\n- ab\n- b\n- b\n"  # "- a" also occurs inside "- ab"
    assert unique_lines(text) == ["## Assets", "- ab"]
