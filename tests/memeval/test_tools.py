from __future__ import annotations

from memeval.scenario.schema import Tool
from memeval.tools import FixtureTools


def make_tools() -> FixtureTools:
    return FixtureTools(
        [
            Tool.model_validate(
                {
                    "name": "query_spans",
                    "description": "Query spans of a project",
                    "parameters": {
                        "type": "object",
                        "properties": {"project": {"type": "string"}, "limit": {"type": "integer"}},
                    },
                    "responses": [
                        {"when": {"project": "agent-prod", "limit": 10}, "result": {"rows": 10}},
                        {"when": {"project": "agent-prod"}, "result": {"rows": 812}},
                        {"default": {"error": "unknown project"}},
                    ],
                }
            ),
            Tool.model_validate(
                {
                    "name": "list_datasets",
                    "responses": [{"when": {"project": "x"}, "result": ["a"]}],
                }
            ),
        ]
    )


def test_first_matching_when_wins() -> None:
    tools = make_tools()
    assert tools.call("query_spans", {"project": "agent-prod", "limit": 10}) == {"rows": 10}
    assert tools.call("query_spans", {"project": "agent-prod", "limit": 5}) == {"rows": 812}


def test_strings_match_case_insensitively_and_json_arguments_parse() -> None:
    tools = make_tools()
    assert tools.call("query_spans", '{"project": " Agent-Prod "}') == {"rows": 812}


def test_default_when_nothing_matches() -> None:
    assert make_tools().call("query_spans", {"project": "other"}) == {"error": "unknown project"}


def test_no_default_gives_a_clear_tool_error() -> None:
    result = make_tools().call("list_datasets", {"project": "y"})
    assert "no result" in result["error"] and '"project": "y"' in result["error"]


def test_unknown_tool_and_bad_arguments_are_errors_the_agent_sees() -> None:
    tools = make_tools()
    assert "unknown tool 'nope'" in tools.call("nope", {})["error"]
    assert "query_spans" in tools.call("nope", {})["error"]
    assert "JSON object" in tools.call("query_spans", "[1, 2")["error"]


def test_specs_are_openai_function_specs() -> None:
    specs = make_tools().specs()
    assert specs[0]["type"] == "function"
    assert specs[0]["function"]["name"] == "query_spans"
    assert specs[1]["function"]["parameters"] == {"type": "object", "properties": {}}
