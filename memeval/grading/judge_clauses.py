"""The `clauses` judge: one small question per part of the criterion, in one growing chat.

Built for small embedded models, which grade a whole criterion in one go poorly (the 1.5B
rejected right answers that named "PR #4812" or "Marco Rossi"). The static instructions and
worked examples come first, then the material (memory first: it is shared by every question
of a session, so llama.cpp's prefix cache serves it), with what the deterministic checks found
in the answer. The model answers yes/no for each part of the criterion; the verdict is pass
only when every part is met. When a part is not met, one more question tells a fail from an
answer that did not attempt the task (declined, did not know, only asked back). Code splits
the criterion and turns "an answer that X fails" into the question "does it X?" (yes fails).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from dataclasses import dataclass
from typing import Any

from memeval.grading.checks import question_checks
from memeval.grading.judge import (
    DEFAULT_TIMEOUT_S,
    cut_result,
    one_line,
    render_prompt,
    timed_out,
)
from memeval.models.base import ChatModel, Message
from memeval.rundir.record import TurnRecord
from memeval.rundir.results import JudgeResult, Verdict

ATTEMPT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["attempts", "declines or asks back"]}},
    "required": ["answer"],
    "additionalProperties": False,
}
YES_NO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["answer"],
    "additionalProperties": False,
}
FAILS_IF = re.compile(r"^an answer that (?P<what>.+?) fails$", re.IGNORECASE)
OPTIONAL = re.compile(r"^(may|possibly|optionally)\b", re.IGNORECASE)
MAX_TOKENS = 16


@dataclass(frozen=True)
class Clause:
    text: str
    negated: bool = False  # "an answer that X fails": a yes to "does it X?" fails


def clauses(criterion: str) -> list[Clause]:
    """The criterion's parts: split at ';' and at sentence ends; optional parts ("may add
    ...") dropped; "An answer that X fails" kept as a negated part."""
    parts: list[Clause] = []
    flat = " ".join(criterion.split())
    for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z(])", flat):
        for piece in _outside_parens(sentence, ";"):
            text = piece.strip().rstrip(".").strip()
            if not text or OPTIONAL.match(text):
                continue
            failing = FAILS_IF.match(text)
            if failing:
                parts.append(Clause(failing.group("what"), negated=True))
            else:
                parts.append(Clause(text))
    return parts or [Clause(flat)]


def _outside_parens(text: str, sep: str) -> list[str]:
    """`text` split at `sep`, except inside parentheses."""
    pieces, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += (char == "(") - (char == ")")
        if char == sep and depth <= 0:
            pieces.append(text[start:i])
            start = i + 1
    return [*pieces, text[start:]]


class ClausesJudge:
    name = "clauses"

    def input_hash(self, record: TurnRecord, criterion: str, check: Verdict | None) -> str:
        blob = json.dumps(
            [self.name, _system(), _material(record), [_asked(c) for c in clauses(criterion)]],
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    async def judge(
        self,
        model: ChatModel,
        record: TurnRecord,
        criterion: str,
        check: Verdict | None,
        *,
        timeout_s: float | None = DEFAULT_TIMEOUT_S,
    ) -> JudgeResult:
        base = {"model": model.name, "input_hash": self.input_hash(record, criterion, check)}
        usage = {"prompt_tokens": 0, "completion_tokens": 0, "cached_prompt_tokens": 0}
        served: list[bool] = []  # per call: served by the response cache
        started = time.perf_counter()
        chat: list[Message] = [
            {"role": "system", "content": _system()},
            {"role": "user", "content": _material(record)},
        ]

        async def ask(schema: dict[str, Any]) -> str:
            response = await asyncio.wait_for(
                model.chat(chat, schema=schema, max_tokens=MAX_TOKENS, temperature=0.0),
                timeout_s,
            )
            usage["prompt_tokens"] += response.prompt_tokens
            usage["completion_tokens"] += response.completion_tokens
            usage["cached_prompt_tokens"] += response.cached_prompt_tokens
            served.append(response.cached)
            content = response.content or ""
            chat.append({"role": "assistant", "content": content})
            return _field(content, schema)

        def finish(verdict: str, reason: str) -> JudgeResult:
            seconds = time.perf_counter() - started
            cached = bool(served) and all(served)
            return JudgeResult(
                verdict=verdict, reason=reason, latency_s=seconds, cached=cached, **base, **usage
            )

        try:
            for clause in clauses(criterion):
                chat.append({"role": "user", "content": _asked(clause)})
                said = await ask(YES_NO_SCHEMA)
                if (said == "yes") == clause.negated:
                    # a fail either way; the attempt question only labels it (asked first, the
                    # 1.5B called most right answers "declines": README, the judge)
                    chat.append({"role": "user", "content": render_prompt("judge_attempt.j2")})
                    if await ask(ATTEMPT_SCHEMA) != "attempts":
                        return finish("not-attempted", "the answer declines or asks back")
                    why = "does" if clause.negated else "does not meet"
                    return finish("fail", f"the answer {why}: {clause.text}")
        except TimeoutError:
            return JudgeResult(verdict="error", error=timed_out(timeout_s), **base, **usage)
        # any failure of the judge's back end or an off-schema answer is this judgement's error
        except Exception as exc:
            error = one_line(f"{type(exc).__name__}: {exc}")
            return JudgeResult(verdict="error", error=error, **base, **usage)
        return finish("pass", "every part of the criterion is met")


def _field(content: str, schema: dict[str, Any]) -> str:
    """The one enum field of a constrained answer; ValueError when it is not there."""
    text = content.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        value = json.loads(text).get("answer")
    except (ValueError, AttributeError):
        raise ValueError(f"judge answer is not the JSON asked for: {text[:120]!r}") from None
    allowed = schema["properties"]["answer"]["enum"]
    if value not in allowed:
        raise ValueError(f"judge answer {value!r} is not one of {allowed}")
    return str(value)


def _asked(clause: Clause) -> str:
    return render_prompt("judge_clause.j2", clause=clause.text, negated=clause.negated)


def _system() -> str:
    return render_prompt("judge_clauses_system.j2")


def _material(record: TurnRecord) -> str:
    question = record.question
    evidence: list[str] = []
    if question is not None:
        checks = question_checks(question, record.answer or "", record.tool_calls)
        evidence = [f"{c.name}: {c.evidence}" for c in checks if c.passed]
    calls = [
        {
            "name": c.name,
            "arguments": json.dumps(c.arguments, ensure_ascii=False, sort_keys=True),
            "result": cut_result(json.dumps(c.result, ensure_ascii=False, default=str)),
        }
        for c in record.tool_calls
    ]
    return render_prompt(
        "judge_clauses_material.j2",
        memory=record.memory_context or "",
        user_message=record.user_message,
        tool_calls=calls,
        answer=record.answer or "",
        evidence=evidence,
    )
