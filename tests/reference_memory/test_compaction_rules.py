"""The priority order compaction must keep, checked in code: what counts as lost and when."""

from __future__ import annotations

from reference_memory import SKELETON
from reference_memory.compaction_rules import bullets, priority_violation


def memory(profile: str = "", goals: str = "", assets: str = "", conventions: str = "") -> str:
    text = SKELETON
    for heading, body in (
        ("## User Profile\n", profile),
        ("## Goals\n", goals),
        ("## Assets\n", assets),
        ("## Conventions\n", conventions),
    ):
        if body:
            text = text.replace(heading, heading + body.strip() + "\n")
    return text


PROFILE = "- [user] Dana, ML engineer on the platform team; owns the book-summary agent."
SEVENTY = "- [user] Datasets have exactly 70 rows: the eval budget covers about $40 per run."
PUBLIC = "- [user] Only public-domain titles go into datasets shared outside the team."
CHECKPOINT = "- Baseline, gpt-4o-mini: 0.214 (15/70)."
GENRE = "- book.genre is empty on agent-prod spans (never populated)."
SENTINEL = "- Evaluator sentinel is the latency check, not a quality measure."

BEFORE = memory(
    profile=PROFILE,
    goals=CHECKPOINT,
    assets=f"{GENRE}\n{SENTINEL}",
    conventions=f"{SEVENTY}\n{PUBLIC}",
)


def test_bullets_know_their_section() -> None:
    found = {(line.section, line.text) for line in bullets(BEFORE)}
    assert ("User Profile", PROFILE) in found and ("Assets", GENRE) in found
    assert [line.high for line in bullets(BEFORE)] == [True, False, False, False, True, True]


def test_dropping_a_user_line_while_a_plain_line_survives_is_a_violation() -> None:
    after = BEFORE.replace(SEVENTY + "\n", "")
    why = priority_violation(BEFORE, after)
    assert why is not None and why.startswith("it dropped a [user] line")
    assert "exactly 70 rows" in why and "0.214" in why  # the first surviving lower line


def test_dropping_the_user_profile_is_a_violation() -> None:
    why = priority_violation(BEFORE, BEFORE.replace(PROFILE + "\n", ""))
    assert why is not None and why.startswith("it dropped a User Profile line")


def test_cutting_lower_lines_first_is_fine() -> None:
    after = BEFORE.replace(GENRE + "\n", "").replace(SENTINEL + "\n", "")
    assert priority_violation(BEFORE, after) is None


def test_user_lines_may_go_once_nothing_lower_is_left() -> None:
    lower_gone = BEFORE
    for line in (CHECKPOINT, GENRE, SENTINEL, PUBLIC):
        lower_gone = lower_gone.replace(line + "\n", "")
    assert priority_violation(BEFORE, lower_gone) is None


def test_a_tightened_or_merged_user_line_is_kept() -> None:
    merged = (
        "- [user] Datasets: exactly 70 rows (eval budget about $40 per run); only "
        "public-domain titles in datasets shared outside the team."
    )
    after = BEFORE.replace(f"{SEVENTY}\n{PUBLIC}", merged)
    assert priority_violation(BEFORE, after) is None


def test_a_changed_number_is_a_loss() -> None:
    after = BEFORE.replace("exactly 70 rows", "exactly 80 rows")
    assert priority_violation(BEFORE, after) is not None


def test_a_user_fact_restated_without_its_tag_is_a_loss() -> None:
    after = BEFORE.replace(SEVENTY, SEVENTY.replace("[user] ", ""))
    assert priority_violation(BEFORE, after) is not None


def test_a_tightened_lower_line_still_counts_as_surviving() -> None:
    after = BEFORE.replace(SEVENTY + "\n", "").replace(
        GENRE, "- book.genre empty on agent-prod spans."
    )
    for line in (CHECKPOINT, SENTINEL):
        after = after.replace(line + "\n", "")
    why = priority_violation(BEFORE, after)
    assert why is not None and "book.genre" in why
