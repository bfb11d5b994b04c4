"""The embedded model's prompt plumbing, without loading a model."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memeval.models.base import ModelError
from memeval.models.local_format import (
    CUT_OFF,
    REPEATED,
    normalize_messages,
    parse_reply,
    tools_grammar,
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "query_spans",
            "description": "Query spans",
            "parameters": {
                "type": "object",
                "properties": {"project": {"type": "string"}},
                "required": ["project"],
            },
        },
    }
]


def test_history_is_rendered_in_the_reply_protocol_with_tools_first() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "spans?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "query_spans", "arguments": '{"project": "p"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "query_spans", "content": '{"rows": 3}'},
        {"role": "assistant", "content": "3 rows."},
    ]
    out = normalize_messages(messages, TOOLS)
    assert out[0]["content"].startswith("You are an agent.\n\n# Tools")
    assert '"name": "query_spans"' in out[0]["content"]
    assert json.loads(out[2]["content"]) == {"name": "query_spans", "arguments": {"project": "p"}}
    assert out[3] == {"role": "tool", "content": '{"rows": 3}', "name": "query_spans"}
    assert json.loads(out[4]["content"]) == {"answer": "3 rows."}
    # The tool block is identical across calls: the static prefix stays cacheable.
    assert normalize_messages(messages[:2], TOOLS)[0] == out[0]


def test_without_tools_messages_pass_through_as_text() -> None:
    parts = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    out = normalize_messages([{"role": "user", "content": parts}])
    assert out == [{"role": "user", "content": "ab"}]


def test_parse_reply() -> None:
    content, calls = parse_reply('{"name": "query_spans", "arguments": {"project": "p"}}', True)
    assert content is None and calls[0].name == "query_spans"
    assert calls[0].arguments == {"project": "p"} and calls[0].id.startswith("call_")
    again = parse_reply('{"name": "query_spans", "arguments": {"project": "p"}}', True)[1]
    assert again[0].id == calls[0].id  # deterministic ids keep re-runs cache-friendly
    assert parse_reply('{"answer": "812 spans"}', True) == ("812 spans", [])
    assert parse_reply("plain", False) == ("plain", [])
    with pytest.raises(ModelError, match="not the JSON"):
        parse_reply("oops", True)


def test_tool_grammar_names_every_tool_and_the_answer() -> None:
    grammar = tools_grammar(TOOLS)
    assert "query_spans" in grammar and "answer" in grammar and "root ::=" in grammar


def test_a_required_call_leaves_no_answer_in_the_grammar() -> None:
    grammar = tools_grammar(TOOLS, tool_choice="required")
    assert "query_spans" in grammar and "answer" not in grammar


def test_no_call_allowed_leaves_only_the_answer_in_the_grammar() -> None:
    grammar = tools_grammar(TOOLS, tool_choice="none")
    assert "answer" in grammar and "query_spans" not in grammar and "name" not in grammar
    verdict = {"type": "object", "properties": {"v": {"enum": ["a", "b"]}}, "required": ["v"]}
    assert "answer" not in tools_grammar(TOOLS, verdict, tool_choice="none")


def test_an_answer_cut_off_at_the_token_limit_is_kept_and_marked() -> None:
    cut = '{"answer": "Map reference to the retrieve_chapters output, then caf\\u00'
    content, calls = parse_reply(cut, True, stopped="length")
    assert calls == []
    assert content == "Map reference to the retrieve_chapters output, then caf" + CUT_OFF
    with pytest.raises(ModelError, match="not the JSON"):
        parse_reply(cut, True)  # not at the limit: a broken reply stays an error


def test_raw_newlines_inside_an_answer_are_kept_not_an_error() -> None:
    """llama.cpp's JSON grammar lets a string hold a literal newline; two questions of an
    embedded combined run were lost as "not the JSON asked for" before this was accepted."""
    whole = '{"answer": "Steps:\n1. **Identify** the rows\n2. Label them"}'
    assert "\n" in whole
    assert parse_reply(whole, True) == ("Steps:\n1. **Identify** the rows\n2. Label them", [])
    cut = '{"answer": "Lena, here is the week:\n\n- The book-summary agent'
    content, _ = parse_reply(cut, True, stopped="length")
    assert content == "Lena, here is the week:\n\n- The book-summary agent" + CUT_OFF


def test_a_call_cut_off_at_the_token_limit_is_an_error() -> None:
    with pytest.raises(ModelError, match="cut off at the token limit"):
        parse_reply('{"name": "query_spans", "arguments": {"proj', True, stopped="length")


def test_an_answer_stopped_for_repeating_itself_is_kept_and_marked_as_such() -> None:
    stopped = '{"answer": "Use the label to track satisfaction. '
    content, calls = parse_reply(stopped, True, stopped="repeat")
    assert calls == [] and content == "Use the label to track satisfaction." + REPEATED
    with pytest.raises(ModelError, match="began repeating itself"):
        parse_reply('{"name": "query_spans", "arguments": {"proj', True, stopped="repeat")
