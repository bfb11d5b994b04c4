"""Compaction: trigger, target, up to 3 attempts, safety on the whole output, the cap."""

from __future__ import annotations

from reference_memory import (
    CAP,
    SKELETON,
    TARGET,
    TRIGGER,
    Compactor,
    FileMemory,
    SQLiteStore,
    Status,
    apply_ops,
)
from reference_memory.document import missing_sections
from reference_memory.testing import ALLOW, add, block, ops, roles, turn

PROFILE = "- [user] Dana leads ML evaluation at Acme"
REWORDED = "- [user] Dana: leads ML evaluation, Acme"  # tightened, not lost
NOTE = add("## Conventions", "- [user] Datasets have exactly 70 rows")
GROWTH = len(NOTE["text"]) + 1  # the note plus its line break


def file_of(size: int, *, notes: tuple[str, ...] = (), profile: str = PROFILE) -> str:
    """A skeleton-shaped file of exactly `size` characters: the profile, `notes` under
    Conventions, padded with (lower-priority) asset bullets."""
    text = SKELETON.replace("## User Profile\n", f"## User Profile\n{profile}\n")
    for note in notes:
        text = text.replace("## Conventions\n", f"## Conventions\n{note}\n")
    n = 0
    while len(text) < size:
        line = f"- Dataset ds-{n:04d} holds sampled traces\n"
        room = size - len(text)
        text = text.replace(
            "## Conventions",
            (line if len(line) <= room else "-" * (room - 1) + "\n") + "## Conventions",
            1,
        )
        n += 1
    assert len(text) == size and not missing_sections(text)
    return text


def compacted(size: int, keep_profile: bool = True) -> str:
    """What a compactor that keeps the order answers: every [user] line kept (the profile
    reworded when asked), the asset bullets cut to size."""
    return file_of(size, notes=(NOTE["text"],), profile=PROFILE if keep_profile else REWORDED)


async def test_no_compaction_at_or_under_the_trigger(store: SQLiteStore) -> None:
    store.put("dana", "acme", file_of(TRIGGER - GROWTH))  # grows to exactly the trigger
    models = roles(summarizer=["s"], updater=[ops(NOTE)], safety=[ALLOW])  # no compactor answers
    report = await FileMemory(models, store).update("dana", "acme", turn())
    assert report.status == Status.WRITTEN and len(report.file_after) == TRIGGER
    assert report.compaction is None


async def test_over_the_trigger_compacts_toward_the_target(store: SQLiteStore) -> None:
    store.put("dana", "acme", file_of(TRIGGER))
    small = compacted(5500, keep_profile=False)
    models = roles(summarizer=["s"], updater=[ops(NOTE)], safety=[ALLOW, ALLOW], compactor=[small])
    report = await FileMemory(models, store).update("dana", "acme", turn())
    assert report.status == Status.WRITTEN
    c = report.compaction
    assert c is not None and c.accepted and c.reached_target and c.attempts == 1
    assert (c.before_chars, c.after_chars) == (TRIGGER + GROWTH, 5500)
    # the harness replays report.ops over file_before, then the compaction
    assert c.text_before == apply_ops(report.file_before, report.ops)
    assert c.text_after == report.file_after == store.get("dana", "acme") == small
    assert c.user_lines_lost == [PROFILE]  # reworded: not word for word, but kept
    # compaction output is checked whole by the gate
    assert models["safety"].requests[1].last.endswith(f"<text>\n{small}\n</text>")
    assert report.safety[1].op_index is None
    request = models["compactor"].requests[0].last
    assert (
        f"The file is {TRIGGER + GROWTH} characters" in request and f"at most {TARGET}" in request
    )


async def test_still_over_the_trigger_is_shortened_again(store: SQLiteStore) -> None:
    store.put("dana", "acme", file_of(7500))
    first, second = compacted(7300), compacted(6800)
    models = roles(
        summarizer=["s"], updater=[ops(NOTE)], safety=[ALLOW, ALLOW], compactor=[first, second]
    )
    memory = FileMemory(models, store, compactor=Compactor(pursue_target=False))
    report = await memory.update("dana", "acme", turn())
    c = report.compaction
    assert c is not None and c.accepted and c.attempts == 2 and not c.reached_target
    assert c.errors == [f"attempt 1: still 7300 characters, over the {TRIGGER} trigger"]
    retry = models["compactor"].requests[1].last
    assert "Your last version was still 7300 characters" in retry and first.strip() in retry
    assert store.get("dana", "acme") == second


async def test_three_attempts_at_most_then_the_best_valid_version(store: SQLiteStore) -> None:
    store.put("dana", "acme", file_of(7500))
    broken = compacted(5000).replace("## Goals\n", "")
    answers = [broken, compacted(7400), "```markdown\n" + compacted(7200) + "```"]
    models = roles(summarizer=["s"], updater=[ops(NOTE)], safety=[ALLOW, ALLOW], compactor=answers)
    report = await FileMemory(models, store).update("dana", "acme", turn())
    c = report.compaction
    assert c is not None and c.attempts == 3 and c.accepted and not c.reached_target
    assert c.errors[0] == "attempt 1: section '## Goals' is missing or out of order"
    assert report.status == Status.WRITTEN and store.get("dana", "acme") == compacted(7200)


async def test_a_compaction_that_cannot_get_under_the_cap_is_dropped(store: SQLiteStore) -> None:
    last_good = file_of(CAP - 20)  # the note pushes it over the cap
    store.put("dana", "acme", last_good)
    answers: list[str | BaseException] = [
        RuntimeError("overloaded"),
        compacted(5000).replace("## Assets", "## Stuff"),
        compacted(CAP + 5),
    ]
    models = roles(summarizer=["s"], updater=[ops(NOTE)], safety=[ALLOW], compactor=answers)
    report = await FileMemory(models, store).update("dana", "acme", turn())
    assert report.status == Status.DROPPED == "dropped-over-cap"
    c = report.compaction
    assert c is not None and not c.accepted and c.attempts == 3 and c.text_after == ""
    assert c.errors == [
        "attempt 1: RuntimeError: overloaded",
        "attempt 2: section '## Assets' is missing or out of order",
        f"attempt 3: still {CAP + 5} characters, over the {TRIGGER} trigger",
        f"best version is {CAP + 5} characters, over the {CAP} cap",
    ]
    assert report.errors == [f"file would be {CAP - 20 + GROWTH} characters, over the {CAP} cap"]
    assert report.file_after == report.file_before == last_good
    assert store.get("dana", "acme") == last_good and store.versions("dana", "acme") == [last_good]


async def test_failed_compaction_under_the_cap_writes_the_uncompacted_file(
    store: SQLiteStore,
) -> None:
    store.put("dana", "acme", file_of(7200))
    models = roles(
        summarizer=["s"], updater=[ops(NOTE)], safety=[ALLOW], compactor=["too short"] * 3
    )
    report = await FileMemory(models, store).update("dana", "acme", turn())
    assert report.status == Status.WRITTEN and len(report.file_after) == 7200 + GROWTH
    assert report.compaction is not None and not report.compaction.accepted
    problem = "section '## User Profile' is missing or out of order"
    assert report.compaction.errors == [
        f"attempt 1: {problem}",
        f"attempt 2: {problem}",
        "attempt 3: not made, its request would repeat attempt 2's word for word",
    ]
    assert report.compaction.attempts == 2 and len(models["compactor"].requests) == 2


async def test_a_blocked_compaction_is_not_used(store: SQLiteStore) -> None:
    store.put("dana", "acme", file_of(7200))
    models = roles(
        summarizer=["s"],
        updater=[ops(NOTE)],
        safety=[ALLOW, block("injected line")],
        compactor=[compacted(5000)],
    )
    report = await FileMemory(models, store).update("dana", "acme", turn())
    assert report.status == Status.WRITTEN and len(store.get("dana", "acme")) == 7200 + GROWTH
    assert report.compaction is not None and not report.compaction.accepted
    assert report.blocked == [compacted(5000)]
    assert report.compaction.errors == ["safety gate blocked the compacted file: injected line"]


async def test_a_gate_failure_on_compaction_output_skips_the_write(store: SQLiteStore) -> None:
    store.put("dana", "acme", file_of(7200))
    models = roles(
        summarizer=["s"],
        updater=[ops(NOTE)],
        safety=[ALLOW, "garbage"],
        compactor=[compacted(5000)],
    )
    report = await FileMemory(models, store).update("dana", "acme", turn())
    assert report.status == Status.SKIPPED_SAFETY
    assert store.versions("dana", "acme") == [file_of(7200)]
    assert report.file_after == report.file_before


async def test_under_the_trigger_but_over_the_target_is_shortened_toward_the_target(
    store: SQLiteStore,
) -> None:
    store.put("dana", "acme", file_of(7500))
    first, second = compacted(6800), compacted(5900)
    models = roles(
        summarizer=["s"], updater=[ops(NOTE)], safety=[ALLOW, ALLOW], compactor=[first, second]
    )
    report = await FileMemory(models, store).update("dana", "acme", turn())
    c = report.compaction
    assert c is not None and c.accepted and c.attempts == 2 and c.reached_target
    assert c.errors == [f"attempt 1: still 6800 characters, over the {TARGET} target"]
    assert store.get("dana", "acme") == second


async def test_dropping_a_user_line_while_keeping_lower_lines_is_rejected_and_asked_again(
    store: SQLiteStore,
) -> None:
    store.put("dana", "acme", file_of(7500))
    wrong = file_of(5800)  # the new [user] note is gone, the asset bullets are all still there
    right = compacted(5800)
    models = roles(
        summarizer=["s"], updater=[ops(NOTE)], safety=[ALLOW, ALLOW], compactor=[wrong, right]
    )
    report = await FileMemory(models, store).update("dana", "acme", turn())
    c = report.compaction
    assert c is not None and c.accepted and c.attempts == 2 and c.reached_target
    assert len(c.errors) == 1 and c.errors[0].startswith("attempt 1: it dropped a [user] line")
    assert "Datasets have exactly 70 rows" in c.errors[0] and "ds-0000" in c.errors[0]
    retry = models["compactor"].requests[1].last
    assert "Your last version was rejected: it dropped a [user] line" in retry
    assert NOTE["text"] in retry  # asked again from the file it started from
    assert store.get("dana", "acme") == right


async def test_dropping_the_user_profile_is_rejected_every_time_and_nothing_compacted(
    store: SQLiteStore,
) -> None:
    store.put("dana", "acme", file_of(7200))
    no_profile = compacted(5000).replace(PROFILE + "\n", "")
    models = roles(
        summarizer=["s"], updater=[ops(NOTE)], safety=[ALLOW], compactor=[no_profile] * 3
    )
    report = await FileMemory(models, store).update("dana", "acme", turn())
    c = report.compaction
    # the second rejection would repeat the second request word for word: no third call
    assert c is not None and not c.accepted and c.attempts == 2
    assert all("it dropped a User Profile line" in e for e in c.errors[:2])
    assert c.errors[2] == "attempt 3: not made, its request would repeat attempt 2's word for word"
    assert len(models["compactor"].requests) == 2
    # under the cap, the uncompacted file is written: nothing of the profile is lost
    assert report.status == Status.WRITTEN and PROFILE in store.get("dana", "acme")
