"""The built-in agent: a message that asks for an action or live data gets a tool call
first, then an answer; one that asks for an answer from what is already known may call no
tool; anything else leaves the model free to call or answer."""

from __future__ import annotations

from typing import Any

import pytest

from memeval.agent import (
    CALL_FAILED_NOTE,
    ChatAgent,
    answers_from_memory,
    asks_advice,
    needs_tool_first,
)
from memeval.models.base import ChatResponse, ModelError, ReplyError, ToolCall
from memeval.models.fake import FakeModel
from memeval.models.scripted import ScriptedModel
from memeval.scenario.schema import Tool
from memeval.tools import FixtureTools

TOOLS = FixtureTools(
    [
        Tool(
            name="count_spans",
            description="Count a project's spans",
            parameters={
                "type": "object",
                "properties": {"project": {"type": "string"}},
                "required": ["project"],
            },
            responses=[{"default": {"spans": 812}}],
        )
    ]
)


@pytest.mark.parametrize(
    "message",
    [
        "Make a dataset of 40 failing traces from checkout-bot.",
        "Please rerun the faithfulness eval on v4.",
        "Thanks. Can you export the labelled rows to CSV?",
        "Quick check before lunch: pull the error spans for billing-agent.",
        "How many traces did checkout-bot log today?",
        "What was the error rate over the last 48 hours?",
        "Which prompt version is the latest one in prod?",
        "I need the p95 latency of the router for this week.",
    ],
)
def test_actions_and_live_questions_need_a_tool_first(message: str) -> None:
    assert needs_tool_first(message)


@pytest.mark.parametrize(
    "message",
    [
        "Which evaluator did we settle on for tone?",
        "Who signs off the launch?",
        "How should I map the reference variable?",
        "The run from last week used the old judge. Anything I should know?",
        "Thanks, that's all for today.",
        "Remember that Priya owns the router now.",
        "Do we have any evals for latency?",
    ],
)
def test_questions_memory_can_answer_leave_the_model_free(message: str) -> None:
    assert not needs_tool_first(message)


def _call(name: str = "count_spans", **arguments: Any) -> ChatResponse:
    return ChatResponse(
        content=None, tool_calls=[ToolCall("c1", name, arguments or {"project": "p"})]
    )


async def test_a_forced_call_is_followed_by_an_answer_that_may_not_call() -> None:
    model = ScriptedModel([_call(), "812 spans."])
    agent = ChatAgent(model)
    result = await agent.respond(
        history=[], user_message="How many spans today?", memory=None, tools=TOOLS
    )
    assert result.answer == "812 spans." and result.error is None
    first, second = model.requests
    assert first.tool_choice == "required" and first.tools
    # the tools stay listed (a prefix cache keeps serving them) but may not be called
    assert second.tools == first.tools and second.tool_choice == "none"
    assert [c.result for c in result.tool_calls] == [{"spans": 812}]


async def test_a_question_memory_answers_is_asked_with_free_tool_choice() -> None:
    model = ScriptedModel([_call(), _call(), "Priya signs off."])
    result = await ChatAgent(model).respond(
        history=[], user_message="Who signs off the launch?", memory="- Priya", tools=TOOLS
    )
    assert result.answer == "Priya signs off."
    assert [r.tool_choice for r in model.requests] == ["auto", "auto", "auto"]
    assert all(r.tools for r in model.requests)  # two calls, then an answer, all free


async def test_the_rule_can_be_turned_off_and_a_model_that_ignores_it_still_answers() -> None:
    off = ScriptedModel(["No tool needed."])
    await ChatAgent(off, tool_first=None).respond(
        history=[], user_message="Make a dataset.", memory=None, tools=TOOLS
    )
    assert off.requests[0].tool_choice == "auto"
    # a back end that answers although a call was required: the answer is the answer
    stubborn = ScriptedModel(["I cannot call tools."])
    result = await ChatAgent(stubborn).respond(
        history=[], user_message="Make a dataset.", memory=None, tools=TOOLS
    )
    assert result.answer == "I cannot call tools." and len(stubborn.requests) == 1


async def test_without_tools_nothing_is_required() -> None:
    model = ScriptedModel(["Done."])
    await ChatAgent(model).respond(
        history=[], user_message="Make a dataset.", memory=None, tools=FixtureTools([])
    )
    assert model.requests[0].tool_choice == "auto" and model.requests[0].tools is None


async def test_the_fake_model_honours_a_required_call() -> None:
    result = await ChatAgent(FakeModel()).respond(
        history=[], user_message="Make a dataset.", memory=None, tools=TOOLS
    )
    assert [c.name for c in result.tool_calls] == ["count_spans"]
    assert isinstance(result.tool_calls[0].arguments["project"], str)
    assert result.answer.startswith("[fake reply")


@pytest.mark.parametrize(
    "message",
    [
        "Is that a regression? Tell me from what you already know; no need to open the config.",
        "Which field holds the verdict? Answer from what we already found.",
        "What was the last checkpoint we recorded, and how far is it from the goal?",
        "Draft the Friday update from what we've recorded so far; no new runs.",
        "Remind me: who signs off the launch?",
        "Without running anything, which judge do we use?",
        "What did we decide about the reranker?",
    ],
)
def test_questions_asked_of_what_is_known_are_recognised(message: str) -> None:
    assert answers_from_memory(message)


@pytest.mark.parametrize(
    "message",
    [
        "Who signs off the launch?",
        "How many spans did checkout-bot log today?",
        "The recorder service is down. What now?",
        "Make a dataset of 40 failing traces.",
    ],
)
def test_other_messages_keep_their_tools(message: str) -> None:
    assert not answers_from_memory(message)


async def test_a_question_of_what_we_recorded_is_answered_without_tools() -> None:
    model = ScriptedModel(["9.1%, a point above the goal."])
    result = await ChatAgent(model).respond(
        history=[],
        user_message="What was the last checkpoint we recorded?",
        memory="- 9.1% checkpoint",
        tools=TOOLS,
    )
    assert result.answer == "9.1%, a point above the goal." and not result.tool_calls
    (only,) = model.requests
    assert only.tools and only.tool_choice == "none"
    free = ScriptedModel([_call(), "Recorded: 9.1%."])
    await ChatAgent(free, from_memory=None).respond(
        history=[],
        user_message="What was the last checkpoint we recorded?",
        memory=None,
        tools=TOOLS,
    )
    assert [bool(r.tools) for r in free.requests] == [True, True]


@pytest.mark.parametrize(
    "message",
    [
        "Set up a faithfulness eval for the router. Which span should it run on?",
        "How should I map the reference variable?",
        "I'm adding a reranker next sprint. Anything I should know first?",
        "Should I spend the sprint on the prompt?",
        "Which judge model would you recommend for tone?",
    ],
)
def test_a_question_of_what_should_be_done_asks_for_advice_not_action(message: str) -> None:
    assert asks_advice(message) and not needs_tool_first(message)


@pytest.mark.parametrize(
    "message",
    [
        # "should" outside a question is a rule being stated, and the action stands
        "Make a dataset of agent-prod spans. Datasets should always have 70 rows.",
        "Which evaluators are attached to agent-prod?",
        "Run the eval on v3 and tell me whether it's fixed.",
        "How many spans does agent-prod have, and how big should my dataset be?",
    ],
)
def test_a_rule_or_a_plain_question_is_not_advice(message: str) -> None:
    assert not asks_advice(message)


def test_live_data_is_still_fetched_first_when_advice_is_asked_about_it() -> None:
    message = "What's the error rate over the last 24 hours, and should I worry?"
    assert asks_advice(message) and needs_tool_first(message)


async def test_advice_is_answered_in_one_round_that_may_not_call() -> None:
    model = ScriptedModel(["The generate span, with the retrieved chunks as the reference."])
    result = await ChatAgent(model).respond(
        history=[],
        user_message="Set up a faithfulness eval for contract-qa. Which span should it use?",
        memory="- contract-qa: retrieve, then generate",
        tools=TOOLS,
    )
    assert result.answer.startswith("The generate span") and not result.tool_calls
    (only,) = model.requests
    assert only.tools and only.tool_choice == "none"
    # with the rule off the model is free: the question still keeps the action from forcing
    off = ScriptedModel([_call(), "Set up."])
    await ChatAgent(off, advice=None).respond(
        history=[],
        user_message="Set up a faithfulness eval for contract-qa. Which span should it use?",
        memory=None,
        tools=TOOLS,
    )
    assert [r.tool_choice for r in off.requests] == ["auto", "auto"]


async def test_an_action_on_what_we_found_is_still_a_tool_call_first() -> None:
    model = ScriptedModel([_call(), "Made it."])
    await ChatAgent(model).respond(
        history=[],
        user_message="Make the dataset from what we already found.",
        memory=None,
        tools=TOOLS,
    )
    assert [r.tool_choice for r in model.requests] == ["required", "none"]


async def test_a_model_that_calls_in_the_answer_round_is_asked_again_without_tools() -> None:
    model = ScriptedModel([_call(), _call(project="q"), "812 spans."])
    result = await ChatAgent(model).respond(
        history=[], user_message="How many spans today?", memory=None, tools=TOOLS
    )
    assert result.answer == "812 spans." and result.error is None
    assert [(r.tool_choice, bool(r.tools)) for r in model.requests] == [
        ("required", True),
        ("none", True),
        ("auto", False),
    ]
    assert [c.arguments for c in result.tool_calls] == [{"project": "p"}]  # never run


async def test_a_call_round_the_model_cannot_finish_is_followed_by_the_answer_round() -> None:
    # the embedded model's repeat stop can cut a call's arguments: answer rather than fail
    looping = ReplyError('local model: reply is repeating itself: \'{"name": "run_eval"\'')
    model = ScriptedModel([looping, "I could not count the spans."])
    result = await ChatAgent(model).respond(
        history=[], user_message="How many spans today?", memory=None, tools=TOOLS
    )
    assert result.error is None and result.answer == "I could not count the spans."
    assert [(r.tool_choice, bool(r.tools)) for r in model.requests] == [
        ("required", True),
        ("none", True),  # the same request, now the answer round
    ]
    assert result.tool_calls == [] and result.messages[-1]["role"] == "assistant"
    # the answer round is told the call did not run (so it does not claim it did); the note
    # is the request's last message and never one of the turn's, which memory reads
    retry = model.requests[1].messages
    assert retry[:-1] == model.requests[0].messages  # the same request, so its prefix is reused
    assert retry[-1] == {"role": "system", "content": CALL_FAILED_NOTE}
    assert all(m.get("content") != CALL_FAILED_NOTE for m in result.messages)


async def test_a_later_unusable_call_round_keeps_the_results_already_in() -> None:
    model = ScriptedModel([_call(), ReplyError("cut off"), "812 spans."])
    result = await ChatAgent(model).respond(
        history=[], user_message="Who signs off the launch?", memory=None, tools=TOOLS
    )
    assert result.error is None and result.answer == "812 spans."
    assert [r.tool_choice for r in model.requests] == ["auto", "auto", "none"]
    answer_round = model.requests[2].messages
    assert [m["role"] for m in answer_round[-3:-1]] == ["assistant", "tool"]  # the call kept
    assert answer_round[-1]["content"] == CALL_FAILED_NOTE
    assert [c.result for c in result.tool_calls] == [{"spans": 812}]


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ([ReplyError("repeating")], "Remind me who signs off."),  # the answer round itself
        ([ReplyError("repeating"), ReplyError("repeating")], "How many spans today?"),
        ([ModelError("HTTP 429")], "How many spans today?"),  # not an unusable reply
    ],
)
async def test_other_failures_are_the_turns_error(script: list[Any], message: str) -> None:
    model = ScriptedModel(script)
    result = await ChatAgent(model).respond(
        history=[], user_message=message, memory=None, tools=TOOLS
    )
    assert result.error is not None and result.answer == ""
    assert len(model.requests) == len(script)  # nothing asked after the turn failed
