"""Prompt and grammar plumbing for the embedded model: messages in, GBNF grammar, tool calls out.

The Qwen2.5-Coder models do not reliably emit their template's `<tool_call>` tags (measured:
both sizes answer with bare or fenced JSON), so with tools the whole reply is one
grammar-constrained JSON object: `{"name": <tool>, "arguments": {...}}` with arguments valid
against that tool's parameters, or `{"answer": "..."}`. Earlier turns are rendered in the
same shape so the model sees one consistent protocol.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from llama_cpp.llama_grammar import JSON_GBNF, SchemaConverter

from memeval.models.base import Message, ReplyError, ToolCall, ToolChoice

FORMAT_DIGEST = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
"""This module's bytes, hashed: how a request is rendered for the embedded model and how its
reply is read. Part of the local model's `decoding` name, so the response cache never serves
a reply, or an unusable reply's error, that another version of this code rendered or read."""

TOOLS_INSTRUCTION = """# Tools

You can call these functions (JSON signatures):
{signatures}

Reply with exactly one JSON object and nothing else:
- to call a function: {{"name": "<function name>", "arguments": {{...}}}}
- to reply to the user: {{"answer": "<your reply>"}}
After a function result arrives, call another function or give your answer."""


def tools_instruction(tools: Sequence[Mapping[str, Any]]) -> str:
    """The static text that tells the model about its tools (goes into the system message)."""
    signatures = "\n".join(
        json.dumps(tool.get("function", tool), ensure_ascii=False, sort_keys=True) for tool in tools
    )
    return TOOLS_INSTRUCTION.format(signatures=signatures)


def normalize_messages(
    messages: Sequence[Message], tools: Sequence[Mapping[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """OpenAI-format messages as plain role/content pairs for the GGUF chat template.

    With tools, the tool instruction joins the first system message (static text first, so
    llama.cpp's prefix cache serves it across calls) and earlier assistant turns are
    rendered as the JSON objects this protocol asks for.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        role = str(message.get("role"))
        content = _text(message.get("content"))
        if tools and role == "assistant":
            content = _assistant_json(content, message.get("tool_calls") or [])
        item: dict[str, Any] = {"role": role, "content": content}
        if role == "tool" and message.get("name"):
            item["name"] = message["name"]
        out.append(item)
    if tools:
        instruction = tools_instruction(tools)
        if out and out[0]["role"] == "system":
            out[0]["content"] = f"{out[0]['content']}\n\n{instruction}"
        else:
            out.insert(0, {"role": "system", "content": instruction})
    return out


def _assistant_json(content: str, tool_calls: Sequence[Mapping[str, Any]]) -> str:
    if not tool_calls:
        return json.dumps({"answer": content}, ensure_ascii=False)
    return "\n".join(json.dumps(_call_dict(c), ensure_ascii=False) for c in tool_calls)


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts: keep the text ones
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return json.dumps(content, ensure_ascii=False)


def _call_dict(call: Mapping[str, Any]) -> dict[str, Any]:
    fn = call.get("function", call)
    args = fn.get("arguments", {})
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            args = {"_raw": args}
    return {"name": fn.get("name", ""), "arguments": args}


def _converter() -> SchemaConverter:
    return SchemaConverter(
        prop_order={"name": 0, "arguments": 1}, allow_fetch=False, dotall=False, raw_pattern=False
    )


def schema_grammar(schema: Mapping[str, Any], strict: bool = False) -> str:
    """GBNF for JSON valid against `schema`.

    If the converter can't express the schema, llama.cpp's generic JSON grammar is used
    (the caller validates the answer anyway), unless `strict`, which re-raises.
    """
    try:
        conv = _converter()
        conv.visit(conv.resolve_refs(dict(schema), "schema"), "")
        return conv.format_grammar()
    except Exception:
        if strict:
            raise
        return JSON_GBNF


def tools_grammar(
    tools: Sequence[Mapping[str, Any]],
    schema: Mapping[str, Any] | None = None,
    tool_choice: ToolChoice = "auto",
) -> str:
    """GBNF for one JSON object: a call of one of `tools`, or an answer (`schema` if given).
    `tool_choice` "required" leaves only the calls; "none" only the answer (the tools stay
    listed in the prompt, so a prefix evaluated for the turn's calls is reused)."""
    answer = dict(schema) if schema is not None else _ANSWER
    if tool_choice == "none":
        return schema_grammar(answer)
    answers = [] if tool_choice == "required" else [answer]
    calls = [_call_option(tool, strict=True) for tool in tools]
    try:
        return schema_grammar({"anyOf": [*calls, *answers]}, strict=True)
    except Exception:  # parameter schemas the converter can't express: constrain names only
        loose = [_call_option(tool, strict=False) for tool in tools]
        return schema_grammar({"anyOf": [*loose, *answers]})


_ANSWER = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}


def _call_option(tool: Mapping[str, Any], strict: bool) -> dict[str, Any]:
    fn = tool.get("function", tool)
    params = (fn.get("parameters") or {"type": "object"}) if strict else {"type": "object"}
    return {
        "type": "object",
        "properties": {"name": {"const": fn["name"]}, "arguments": params},
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }


CUT_OFF = " …[cut off at the token limit]"
REPEATED = " …[stopped: it began repeating itself]"


_STOPPED_MARK = {"length": CUT_OFF, "repeat": REPEATED}
_STOPPED_WHY = {
    "length": "cut off at the token limit",
    "repeat": "stopped when it began repeating itself",
}


def parse_reply(
    text: str, tools_given: bool, schema_given: bool = False, stopped: str = ""
) -> tuple[str | None, list[ToolCall]]:
    """Split a generated reply into (content, tool calls).

    `stopped` says why generation ended before the model did: "length" (max_tokens) or
    "repeat" (it began repeating itself; the text ends before the repeat); "" when the model
    finished. An answer stopped mid-string is kept, marked with why (what the model said is
    still its answer); a stopped call is an error.
    """
    if not tools_given:
        return text, []
    try:
        data = json.loads(text, strict=False)  # llama.cpp's JSON grammar allows raw newlines
    except ValueError as exc:
        mark = _STOPPED_MARK.get(stopped, "")
        partial = _partial_answer(text) if mark and not schema_given else None
        if partial is not None:
            return partial + mark, []
        why = _STOPPED_WHY.get(stopped, "not the JSON asked for")
        raise ReplyError(f"local model: reply is {why}: {text[:120]!r}") from exc
    if isinstance(data, dict) and "name" in data and "arguments" in data and len(data) == 2:
        body = json.dumps(data, sort_keys=True)
        # deterministic ids: a re-run must send the same history to hit the response cache
        call_id = f"call_{hashlib.sha256(body.encode()).hexdigest()[:12]}"
        return None, [ToolCall(call_id, str(data["name"]), dict(data["arguments"] or {}))]
    if schema_given:
        return text, []
    if isinstance(data, dict) and isinstance(data.get("answer"), str):
        return data["answer"], []
    raise ReplyError(f"local model: reply is neither a call nor an answer: {text[:120]!r}")


_ANSWER_START = re.compile(r'^\s*\{\s*"answer"\s*:\s*"')


def _partial_answer(text: str) -> str | None:
    """The text of `{"answer": "...` cut off mid-string, or None if it is not that shape."""
    if not _ANSWER_START.match(text):
        return None
    for trim in range(0, 8):  # a cut may split an escape sequence such as \u00e9
        try:
            data = json.loads(text[: len(text) - trim] + '"}', strict=False)
        except ValueError:
            continue
        answer = data.get("answer") if isinstance(data, dict) else None
        return answer.rstrip() if isinstance(answer, str) else None
    return None
