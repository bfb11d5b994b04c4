"""The cascade and `### ` subsections: a new goal opens its own, and so does a project the user
names while the turn's tools work on it; a checkpoint goes under the goal it measures, a fact
lands in the subsection the conversation names (else above the first subsection), and a line
under a goal the turn does not name is never taken for an older value of the turn's fact."""

from __future__ import annotations

from reference_memory import SKELETON, SQLiteStore, Turn, apply_ops
from reference_memory.cascade_place import (
    Fact,
    Plan,
    goal_anchor,
    goal_blocks,
    lead_anchor,
    named_subsection,
    section_lines,
    turn_project,
    under_other_subsection,
)
from reference_memory.cascade_text import clean_title, goal_title

from .test_cascade import Oracle, memory, tool_turn

TWO_GOALS = SKELETON.replace(
    "## Goals\n",
    "## Goals\n"
    "### Book agent: prod hallucination under 10%\n"
    "- [user] Get prod hallucination under 10% by Q3.\n"
    "- Baseline, gpt-4o-mini: 0.214.\n"
    "### contract-qa launch: retrieval hit rate at least 0.90\n"
    "- [user] Launch bar: hit rate of at least 0.90 on the golden set.\n",
).replace(
    "## Projects\n",
    "## Projects\n"
    "### Book-summary agent (agent-prod)\n"
    "- [user] Writes chapter summaries for the reading app.\n"
    "### contract-qa (legal RAG app)\n"
    "- [user] Answers lawyers' questions about contracts.\n",
)
OTHER_GOAL = (
    "What's the rejection rate over the last 7 days? Our goal is to get it under 8% by the end "
    "of Q3."
)


async def test_a_new_goal_opens_its_own_subsection_with_the_checkpoint_of_its_turn(
    store: SQLiteStore,
) -> None:
    store.put("dana", "acme", TWO_GOALS)
    model = Oracle(
        {
            "Our goal": ("goal", ""),
            "11.9% of proposals": ("progress", ""),
        },
        titles={"Our goal": "Assistant: rejection rate under 8% by Q3"},
    )
    reply = "11.9% of proposals were rejected: the baseline against the goal."
    report = await memory(model, store).update(
        "dana", "acme", tool_turn(OTHER_GOAL, {"rejection_rate": 0.119}, reply)
    )
    goals = section_lines(store.get("dana", "acme"), "Goals")
    assert goals[-3:] == [
        "### Assistant: rejection rate under 8% by Q3",
        "- [user] Our goal is to get it under 8% by the end of Q3.",
        "- 11.9% of proposals were rejected: the baseline against the goal.",
    ]
    assert "- Baseline, gpt-4o-mini: 0.214." in goals  # the word "baseline" did not pull it there
    assert "as '### Assistant: rejection rate under 8% by Q3'" in report.attempts[0].raw


async def test_a_goal_said_about_another_subject_never_replaces_a_goal_it_does_not_name(
    store: SQLiteStore,
) -> None:
    store.put("dana", "acme", TWO_GOALS)
    # a model that would call the other goal "update" is never asked
    model = Oracle({"Our goal": ("goal", "")}, relations={"- [user] Get prod": "update"})
    report = await memory(model, store).update("dana", "acme", Turn([_user(OTHER_GOAL)]))
    after = store.get("dana", "acme")
    assert "- [user] Get prod hallucination under 10% by Q3." in after
    assert "- [user] Our goal is to get it under 8% by the end of Q3." in after
    assert not any("Memory already has this line" in str(r[-1]["content"]) for r in model.requests)
    assert "its subsection is not named" in report.attempts[0].raw


async def test_a_goal_that_names_its_subject_can_still_replace_its_line(
    store: SQLiteStore,
) -> None:
    store.put("dana", "acme", TWO_GOALS)
    model = Oracle({"New goal": ("goal", "")}, relations={"- [user] Get prod": "update"})
    text = "New goal for the book agent: get prod hallucination under 5% by Q3."
    await memory(model, store).update("dana", "acme", Turn([_user(text)]))
    after = store.get("dana", "acme")
    assert "- [user] Get prod hallucination under 10% by Q3." not in after
    assert "under 5%" in after.split("### contract-qa launch")[0]  # in place, no new heading


async def test_a_title_that_invents_a_number_gives_way_to_the_goals_own_words(
    store: SQLiteStore,
) -> None:
    store.put("dana", "acme", SKELETON)
    model = Oracle({"Our goal": ("goal", "")}, titles={"Our goal": "Rejection rate under 5%"})
    report = await memory(model, store).update("dana", "acme", Turn([_user(OTHER_GOAL)]))
    assert "### Get it under 8% by the end of Q3\n" in store.get("dana", "acme")
    assert "model wrote 'Rejection rate under 5%'" in report.attempts[0].raw


async def test_a_finding_lands_in_the_project_subsection_the_user_named(
    store: SQLiteStore,
) -> None:
    store.put("dana", "acme", TWO_GOALS)
    model = Oracle({"Most misses": ("finding", "")})
    reply = "Most misses are DPA clauses buried in annexes."
    turn = tool_turn("Why does contract-qa miss clauses?", {"misses": 27}, reply)
    await memory(model, store).update("dana", "acme", turn)
    assert section_lines(store.get("dana", "acme"), "Projects")[-2:] == [
        "- [user] Answers lawyers' questions about contracts.",
        "- Most misses are DPA clauses buried in annexes.",
    ]


def test_goal_blocks_split_on_headings_or_on_user_lines_before_any() -> None:
    flat = SKELETON.replace("## Goals\n", "## Goals\n- [user] A.\n- a1.\n- [user] B.\n")
    assert goal_blocks(flat) == [["- [user] A.", "- a1."], ["- [user] B."]]
    assert [block[0] for block in goal_blocks(TWO_GOALS)] == [
        "### Book agent: prod hallucination under 10%",
        "### contract-qa launch: retrieval hit rate at least 0.90",
    ]
    assert goal_anchor(TWO_GOALS, "hallucination 0.086 with gpt-4.1", set()) == (
        "- Baseline, gpt-4o-mini: 0.214."
    )


def test_the_subsection_a_conversation_names_is_told_by_words_no_sibling_heading_has() -> None:
    assert named_subsection(TWO_GOALS, "Projects", "the legal app's misses") == (
        "### contract-qa (legal RAG app)"
    )
    assert named_subsection(TWO_GOALS, "Projects", "how are things?") is None
    assert named_subsection(TWO_GOALS, "Projects", "book agent and legal app") is None
    line = "- [user] Get prod hallucination under 10% by Q3."
    assert under_other_subsection(TWO_GOALS, line, OTHER_GOAL)
    assert not under_other_subsection(TWO_GOALS, line, "the book agent's hallucination")
    assert not under_other_subsection(SKELETON + line + "\n", line, OTHER_GOAL)  # no heading


def test_goal_titles_made_from_the_goal() -> None:
    assert goal_title("Our goal is to get it under 8% by the end of Q3; it's an OKR.") == (
        "Get it under 8% by the end of Q3"
    )
    assert goal_title(
        "reach a hit rate of at least 0.90 on legal-golden-120 before the end of July"
    ) == ("Reach a hit rate of at least 0.90 on legal-golden-120…")
    assert clean_title('### "Refund errors under 2%."') == "Refund errors under 2%"


def test_a_new_goal_is_added_with_its_heading_and_a_repeated_heading_is_reused() -> None:
    plan = Plan(TWO_GOALS)
    plan.adds.append(Fact("Rejections under 8%.", True, "Goals", title="Assistant: rejections"))
    plan.adds.append(
        Fact(
            "Hit rate 0.92 for UK.",
            True,
            "Goals",
            title="contract-qa launch: retrieval hit rate at least 0.90",
        )
    )
    text = apply_ops(TWO_GOALS, plan.ops())
    goals = section_lines(text, "Goals")
    assert goals[-5:] == [
        "### contract-qa launch: retrieval hit rate at least 0.90",
        "- [user] Launch bar: hit rate of at least 0.90 on the golden set.",
        "- [user] Hit rate 0.92 for UK.",
        "### Assistant: rejections",
        "- [user] Rejections under 8%.",
    ]


def test_two_goals_of_one_turn_given_one_title_share_one_heading() -> None:
    plan = Plan(SKELETON)
    plan.adds.append(Fact("Only the summarize span counts.", True, "Goals", title="Hallucination"))
    plan.adds.append(Fact("Under 10% by Q3.", True, "Goals", title="hallucination"))
    plan.adds.append(Fact("Baseline 0.214.", False, "Goals", progress=True))
    text = apply_ops(SKELETON, plan.ops())
    assert section_lines(text, "Goals") == [
        "### Hallucination",
        "- [user] Only the summarize span counts.",
        "- [user] Under 10% by Q3.",
        "- Baseline 0.214.",
    ]


async def test_a_goal_without_a_target_or_worded_as_a_standing_rule_is_a_rule(
    store: SQLiteStore,
) -> None:
    store.put("dana", "acme", SKELETON)
    model = Oracle({"Count": ("goal", ""), "Datasets": ("goal", ""), "We want": ("goal", "")})
    text = (
        'Count "edited" proposals as approved. Datasets should always have exactly 70 rows. '
        "We want the error rate below 2% by the end of Q3."
    )
    await memory(model, store).update("dana", "acme", Turn([_user(text)]))
    after = store.get("dana", "acme")
    conventions = section_lines(after, "Conventions")
    assert '- [user] Count "edited" proposals as approved.' in conventions
    assert "- [user] Datasets should always have exactly 70 rows." in conventions
    goals = section_lines(after, "Goals")
    assert goals[0].startswith("### ") and any("below 2%" in line for line in goals)


def test_words_that_phrase_a_goal_never_name_its_subsection() -> None:
    file = SKELETON.replace(
        "## Goals\n",
        "## Goals\n### Get prod hallucination under 10% before launch\n- [user] Under 10%.\n"
        "### Retrieval hit rate at least 0.90\n- [user] At least 0.90.\n",
    )
    assert under_other_subsection(file, "- [user] Under 10%.", "Our goal is to get it under 8%.")
    assert not under_other_subsection(file, "- [user] Under 10%.", "prod hallucination, now 5%")


def test_a_checkpoint_that_names_no_goal_follows_the_one_before_it() -> None:
    plan = Plan(TWO_GOALS)
    plan.adds.append(Fact("gpt-4.1 prod hallucination 0.086 (6 of 70).", False, "Goals", True))
    plan.adds.append(Fact("The cost is speed: p50 goes from 3.1 s to 4.0 s.", False, "Goals", True))
    text = apply_ops(TWO_GOALS, plan.ops())
    book = text.split("### contract-qa launch")[0]
    assert book.endswith(
        "0.214.\n- gpt-4.1 prod hallucination 0.086 (6 of 70).\n"
        "- The cost is speed: p50 goes from 3.1 s to 4.0 s.\n"
    )


def _user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def project_turn(user: str, project: str, reply: str) -> Turn:
    """A turn whose one tool call works on `project`."""
    return tool_turn(user, {"n": 9120}, reply, {"project": project, "window": "7d"})


def test_turn_projects_are_the_tool_calls_project_arguments() -> None:
    turn = project_turn("Check agent-prod.", "agent-prod", "Fine.")
    extra = {"name": "x", "arguments": {"project": "agent-local"}}  # arguments as an object
    turn.messages.insert(2, {"role": "assistant", "tool_calls": [{"function": extra}]})
    turn.messages.insert(2, {"role": "assistant", "tool_calls": [{"function": {"arguments": "!"}}]})
    assert turn.projects() == ["agent-prod", "agent-local"]
    assert Turn([_user("hi")]).projects() == []


def test_the_turns_project_is_the_one_its_tools_used_that_the_user_named() -> None:
    assert turn_project(["agent-prod"], "Is agent-prod's summarize step slow?") == "agent-prod"
    assert turn_project(["Agent-Prod"], "how is agent-prod") == "Agent-Prod"
    assert turn_project(["agent-prod"], "How is production doing?") == ""  # the agent's guess
    assert turn_project(["agent-prod"], "How is prod doing?") == ""  # part of a name is not it
    assert turn_project(["agent-prod", "agent-local"], "agent-prod vs agent-local") == ""
    assert turn_project([], "agent-prod") == ""
    # a name that is not one identifier never heads a subsection
    assert turn_project(["agent prod"], "agent prod") == ""
    assert turn_project(["x\n## Conventions"], "x\n## Conventions") == ""


async def test_a_project_the_user_names_while_the_tools_work_on_it_opens_its_subsection(
    store: SQLiteStore,
) -> None:
    store.put("dana", "acme", SKELETON.replace("## Projects\n", "## Projects\n- [user] Old.\n"))
    model = Oracle(
        {
            "We moved": ("project", ""),
            "genre is empty": ("finding", ""),
            "Every span": ("finding", ""),
        }
    )
    user = "We moved agent-prod's summarize step to gpt-4.1 last week. Check its genre field."
    reply = "genre is empty on every agent-prod summarize span. Every span lacks a book id too."
    report = await memory(model, store).update(
        "dana", "acme", project_turn(user, "agent-prod", reply)
    )
    assert section_lines(store.get("dana", "acme"), "Projects") == [
        "- [user] Old.",
        "### agent-prod",
        "- [user] We moved agent-prod's summarize step to gpt-4.1 last week.",
        "- genre is empty on every agent-prod summarize span.",
        "- Every span lacks a book id too.",
    ]
    assert "as '### agent-prod'" in report.attempts[0].raw

    # a later turn that names it adds under the heading; one that does not goes above
    # the first subsection, where it reads as no project's
    model = Oracle({"agent-prod p50": ("finding", ""), "Seven projects": ("finding", "")})
    more = "agent-prod p50 latency is 3.1 s over the week."
    pipeline = memory(model, store)
    await pipeline.update("dana", "acme", project_turn("agent-prod?", "agent-prod", more))
    other = "Seven projects send traces to this space."
    await pipeline.update("dana", "acme", project_turn("Projects?", "agent-local", other))
    assert section_lines(store.get("dana", "acme"), "Projects") == [
        "- [user] Old.",
        "- Seven projects send traces to this space.",
        "### agent-prod",
        "- [user] We moved agent-prod's summarize step to gpt-4.1 last week.",
        "- genre is empty on every agent-prod summarize span.",
        "- Every span lacks a book id too.",
        "- agent-prod p50 latency is 3.1 s over the week.",
    ]


async def test_a_finding_that_names_the_project_its_tool_worked_on_goes_under_it(
    store: SQLiteStore,
) -> None:
    model = Oracle({"attributes.book.genre": ("finding", ""), "Premium": ("finding", "")})
    reply = (
        "attributes.book.genre is empty on every agent-prod summarize span. "
        "Premium accounts make 61% of the summarize calls."
    )
    await memory(model, store).update(
        "dana", "acme", project_turn("Can we slice by genre?", "agent-prod", reply)
    )
    assert section_lines(store.get("dana", "acme"), "Projects") == [
        "- Premium accounts make 61% of the summarize calls.",  # names no project
        "### agent-prod",
        "- attributes.book.genre is empty on every agent-prod summarize span.",
    ]


async def test_a_line_under_a_project_is_compared_even_when_the_turn_does_not_name_it(
    store: SQLiteStore,
) -> None:
    file = SKELETON.replace(
        "## Projects\n",
        "## Projects\n### agent-prod\n- [user] The summarize step runs on gpt-4o-mini.\n"
        "### agent-local\n- [user] Laptop runs only.\n",
    )
    store.put("dana", "acme", file)
    model = Oracle(
        {"The summarize step": ("project", "")}, relations={"- [user] The summarize": "update"}
    )
    said = "The summarize step runs on gpt-4.1 now."
    await memory(model, store).update("dana", "acme", Turn([_user(said)]))
    assert section_lines(store.get("dana", "acme"), "Projects")[:2] == [
        "### agent-prod",
        "- [user] The summarize step runs on gpt-4.1 now.",
    ]
    assert not under_other_subsection(file, "- [user] Laptop runs only.", "anything")


def test_a_line_no_subsection_claims_goes_above_the_first_one() -> None:
    plan = Plan(TWO_GOALS)
    plan.adds.append(Fact("Seven projects send traces here.", False, "Projects"))
    text = apply_ops(TWO_GOALS, plan.ops())
    assert section_lines(text, "Projects")[:2] == [
        "- Seven projects send traces here.",
        "### Book-summary agent (agent-prod)",
    ]
    assert lead_anchor(TWO_GOALS, "Projects", set()) == "## Projects"
    assert lead_anchor(SKELETON, "Projects", set()) == "## Projects"  # no subsection: its end
