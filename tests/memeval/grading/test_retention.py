"""Fact retention on hand-made run directories: states per turn and who removed a fact."""

from __future__ import annotations

from pathlib import Path

from memeval.rundir.results import FactRetention
from reference_memory.edits import apply_ops
from tests.memeval.rundirs import RunDirBuilder, grade_and_save, memory

SEVENTY = {"match": ["70 rows"], "user_tagged": True, "section": "Conventions"}
CONV = "- [user] Datasets always have exactly 70 rows."
STYLE = "- [user] Prefers bullet summaries."


def fact(results, name: str) -> FactRetention:
    return next(f for f in results.facts if f.fact == name)


async def test_a_fact_deleted_by_a_replace_op_is_blamed_on_that_op(tmp_path: Path) -> None:
    run = RunDirBuilder(tmp_path / "run")
    sc = run.scenario("book", facts={"seventy": SEVENTY})
    start = memory()
    add = [{"op": "add", "anchor": "## Conventions\n", "text": CONV}]
    f1 = apply_ops(start, add)
    sc.turn("t1", file=f1, ops=add, expect={"records": ["seventy"]})
    edits = [
        {"op": "add", "anchor": "## Goals\n", "text": "- ship v2 by June"},
        {"op": "replace", "old": CONV + "\n", "new": ""},  # the bad edit
        {"op": "add", "anchor": "## Projects\n", "text": "- book-summary agent"},
    ]
    f2 = apply_ops(f1, edits)
    sc.turn("t2", file=f2, ops=edits)
    sc.turn("t3", expect={"records": ["seventy"]})
    results = await grade_and_save(run.write())

    seventy = fact(results, "seventy")
    assert seventy.cells == ["present", "lost", "missing"]
    assert seventy.first_present == "t1"
    assert seventy.absent_while_expected == ["t2", "t3"]
    [loss] = seventy.losses
    assert (loss.turn, loss.index) == ("t2", 1)
    assert loss.culprit.kind == "op" and loss.culprit.op_index == 1
    assert loss.culprit.op == {"op": "replace", "old": CONV + "\n", "new": ""}
    assert loss.culprit.excerpt == CONV


async def test_a_fact_lost_in_compaction_is_blamed_on_compaction(tmp_path: Path) -> None:
    run = RunDirBuilder(tmp_path / "run")
    sc = run.scenario("book", facts={"style": {"match": ["bullet summaries"]}})
    f1 = memory(Conventions=[STYLE])
    sc.turn("t1", file=f1, expect={"records": ["style"]})
    filler = [{"op": "add", "anchor": STYLE + "\n", "text": "- notes " + "x" * 7100}]
    over = apply_ops(f1, filler)
    assert "bullet summaries" in over  # the ops kept it ...
    compacted = memory(Conventions=["- notes (compacted)"])  # ... the compactor cut it
    sc.turn("t2", file=compacted, ops=filler, compaction={"text_before": over})
    results = await grade_and_save(run.write())

    style = fact(results, "style")
    assert style.cells == ["present", "lost"]
    [loss] = style.losses
    assert loss.culprit.kind == "compaction" and loss.culprit.op_index is None
    assert loss.culprit.excerpt == STYLE


async def test_states_before_expected_after_until_and_unexplained_losses(tmp_path: Path) -> None:
    run = RunDirBuilder(tmp_path / "run")
    sc = run.scenario(
        "book",
        facts={"seventy": SEVENTY | {"until": "t4"}, "goal": {"match": ["ship v2"]}},
    )
    sc.turn("t1", file=memory())
    sc.turn("t2", file=memory(), expect={"records": ["seventy"]})  # expected, never written
    with_it = memory(Goals=["- ship v2"], Conventions=[CONV])
    sc.turn("t3", file=with_it)
    # the file lost both facts with no op and no compaction: nothing to blame
    sc.turn("t4", file=memory(Conventions=["- [user] Datasets have 80 rows."]))
    results = await grade_and_save(run.write())

    seventy = fact(results, "seventy")
    assert seventy.cells == ["absent", "missing", "present", "superseded"]
    assert seventy.expected_from == "t2" and seventy.absent_while_expected == ["t2"]
    assert seventy.losses == []
    goal = fact(results, "goal")
    assert goal.cells == ["absent", "absent", "present", "lost"]
    assert goal.absent_while_expected == []  # never expected: a loss, not a miss
    assert goal.losses[0].culprit.kind == "unknown"
    assert "kept the fact" in goal.losses[0].culprit.excerpt


async def test_an_op_list_that_no_longer_applies_gives_unknown_with_the_reason(
    tmp_path: Path,
) -> None:
    run = RunDirBuilder(tmp_path / "run")
    sc = run.scenario("book", facts={"style": {"match": ["bullet summaries"]}})
    sc.turn("t1", file=memory(Conventions=[STYLE]))
    broken = [{"op": "replace", "old": "not in the file", "new": ""}]
    sc.turn("t2", file=memory(), ops=broken)
    results = await grade_and_save(run.write())
    culprit = fact(results, "style").losses[0].culprit
    assert culprit.kind == "unknown" and culprit.excerpt.startswith("replaying op 0 failed: op 0")


def turn_verdicts(results, turn: str):
    return next(t for t in results.turns if t.turn == turn)


async def test_losing_an_expected_fact_fails_the_write_of_the_turn_that_lost_it(
    tmp_path: Path,
) -> None:
    run = RunDirBuilder(tmp_path / "run")
    sc = run.scenario("book", facts={"seventy": SEVENTY, "style": {"match": ["bullet summaries"]}})
    add = [{"op": "add", "anchor": "## Conventions\n", "text": CONV}]
    f1 = apply_ops(memory(), add)
    sc.turn("t1", file=f1, ops=add, expect={"records": ["seventy"]})
    cut = [{"op": "replace", "old": CONV + "\n", "new": ""}]
    f2 = apply_ops(f1, cut)
    # t2's own expectation holds (the style fact is not even expected yet): retention fails it
    sc.turn("t2", file=f2, ops=cut, expect={"forbids": ["80 rows"]})
    sc.turn("t3", file=f2)  # no expectation of its own and nothing left to lose: still checked
    results = await grade_and_save(run.write())

    t1, t2, t3 = (turn_verdicts(results, t) for t in ("t1", "t2", "t3"))
    assert t1.write is not None and t1.write.verdict == "pass"
    assert [c.name for c in t1.write_checks] == ["records:seventy", "retention"]
    assert t2.write is not None and t2.write.verdict == "fail"
    [forbid, lost] = t2.write_checks
    assert forbid.passed and forbid.name == "forbids:80 rows"
    assert (lost.name, lost.passed) == ("retention:seventy", False)
    assert lost.evidence == f"lost by edit op 0 (replace): {CONV}"
    assert t2.write.reason == "failed: retention:seventy"
    # the fact stays missing on t3, but t3 did not lose it: t3's write passes
    assert t3.write is not None and t3.write.verdict == "pass"
    assert [c.name for c in t3.write_checks] == ["retention"]


async def test_a_compaction_loss_fails_the_write_and_names_the_compaction(tmp_path: Path) -> None:
    run = RunDirBuilder(tmp_path / "run")
    sc = run.scenario("book", facts={"style": {"match": ["bullet summaries"]}})
    f1 = memory(Conventions=[STYLE])
    sc.turn("t1", file=f1, expect={"records": ["style"]})
    filler = [{"op": "add", "anchor": STYLE + "\n", "text": "- notes " + "x" * 7100}]
    compacted = memory(Conventions=["- notes (compacted)"])
    sc.turn("t2", file=compacted, ops=filler, compaction={"text_before": apply_ops(f1, filler)})
    results = await grade_and_save(run.write())

    t2 = turn_verdicts(results, "t2")
    assert t2.write is not None and t2.write.verdict == "fail"
    [lost] = t2.write_checks
    assert lost.name == "retention:style"
    assert lost.evidence == f"lost by the compaction: {STYLE}"


async def test_turns_before_any_expected_fact_and_superseded_facts_are_not_retention_checked(
    tmp_path: Path,
) -> None:
    run = RunDirBuilder(tmp_path / "run")
    sc = run.scenario("book", facts={"seventy": SEVENTY | {"until": "t3"}})
    sc.turn("t1", file=memory())  # nothing expected yet: no write verdict at all
    f2 = memory(Conventions=[CONV])
    sc.turn("t2", file=f2, expect={"records": ["seventy"]})
    # t3 supersedes the fact and removes it: that is the point, not a loss
    sc.turn("t3", file=memory(Conventions=["- [user] Datasets have 80 rows."]))
    results = await grade_and_save(run.write())

    assert turn_verdicts(results, "t1").write is None
    assert turn_verdicts(results, "t1").write_checks == []
    t3 = turn_verdicts(results, "t3")
    assert t3.write is None and t3.write_checks == []


async def test_a_note_only_expectation_stays_ungraded_when_retention_holds(
    tmp_path: Path,
) -> None:
    run = RunDirBuilder(tmp_path / "run")
    sc = run.scenario("book", facts={"seventy": SEVENTY})
    f1 = memory(Conventions=[CONV])
    sc.turn("t1", file=f1, expect={"records": ["seventy"]})
    sc.turn("t2", file=f1, expect={"note": "keeps the row rule as the user stated it"})
    results = await grade_and_save(run.write())

    t2 = turn_verdicts(results, "t2")
    assert t2.write is not None and t2.write.verdict == "na"  # the judge or a human decides
    assert [c.name for c in t2.write_checks] == ["retention"]


async def test_a_fact_of_the_initial_file_cut_by_the_first_compaction_is_a_loss(
    tmp_path: Path,
) -> None:
    # a session that starts from a given file (initial_memory): its first update starts there
    run = RunDirBuilder(tmp_path / "run")
    sc = run.scenario("book", facts={"style": {"match": ["bullet summaries"]}})
    initial = memory(Conventions=[STYLE])
    filler = [{"op": "add", "anchor": STYLE + "\n", "text": "- notes " + "x" * 7100}]
    compacted = memory(Conventions=["- notes (compacted)"])
    sc.turn(
        "t1",
        file_before=initial,
        file=compacted,
        ops=filler,
        compaction={"text_before": apply_ops(initial, filler)},
        expect={"records": ["style"]},
    )
    results = await grade_and_save(run.write())

    style = fact(results, "style")
    assert style.cells == ["lost"]
    [loss] = style.losses
    assert loss.culprit.kind == "compaction"
    t1 = turn_verdicts(results, "t1")
    assert [(c.name, c.passed) for c in t1.write_checks] == [
        ("records:style", False),
        ("retention:style", False),
    ]
