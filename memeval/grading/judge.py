"""The LLM judge: grades an answer (or a memory write) against the scenario's written criterion.

The judge sees the criterion, the user message, the answer with its tool calls, and the
memory the agent was given; it answers `{verdict: pass|fail|not-attempted, reason}` under a
JSON schema ("not-attempted": the answer declined, did not know, or only asked back).
Anything else — an exception, a timeout, unparseable or off-schema text — is recorded as
verdict "error" with the error; a failed judge is never turned into a guess.
"""

from __future__ import annotations

import asyncio
import difflib
import functools
import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import jinja2

from memeval.models.base import ChatModel, Message
from memeval.models.spec import ModelSpec
from memeval.rundir.record import TurnRecord
from memeval.rundir.results import JudgeResult, Verdict
from reference_memory.turn import Turn

PROMPTS_DIR = Path(__file__).parent / "prompts"
REASON_CHARS = 400
"""The longest reason a judge may give. The prompt asks for one or two sentences; without a
bound a small model can run on inside the string until the token limit and leave no verdict
(seen: 2,048 tokens and 165 s for one judgement that ended as "not JSON")."""
BOUND_SLACK = 16
"""A reason this close to the bound may have been ended by it: the grammar closes the string
when the next likely token no longer fits, so a cut reason can stop a few characters short."""
JUDGE_MAX_TOKENS = 512
"""Tokens one judge answer may take: the verdict and a bounded reason fit well inside it, and a
back end that ignores maxLength ends a runaway here as an error in a quarter of the time."""
JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["pass", "fail", "not-attempted"]},
        "reason": {"type": "string", "maxLength": REASON_CHARS},
    },
    "required": ["verdict", "reason"],
    "additionalProperties": False,
}
VERDICTS = ("pass", "fail", "not-attempted")
RESULT_CHARS = 600  # a tool result longer than this is cut in the judge's input
DEFAULT_TIMEOUT_S = 300.0
"""The deadline of one judge call to an endpoint, which can hang. An embedded model gets none
(judge_deadline): its calls cannot hang, only wait their turn on the one worker, and a deadline
that counts that wait failed judgements that never started whenever the CPU was shared."""


def judge_deadline(spec: ModelSpec) -> float | None:
    """Seconds one judge call may take for the model `spec` names; None: no deadline."""
    return None if spec.local_name is not None else DEFAULT_TIMEOUT_S


def timed_out(timeout_s: float | None) -> str:
    return f"judge timed out after {timeout_s:g} s" if timeout_s else "judge timed out"


@functools.cache
def _env() -> jinja2.Environment:
    # prompts are plain text for a model, not HTML: no autoescape, but no silent blanks either
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(PROMPTS_DIR),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render_prompt(template: str, **values: Any) -> str:
    return _env().get_template(template).render(**values).strip()


@dataclass(frozen=True)
class JudgeRequest:
    """The messages for one judgement and their hash (a stored result is reused only when
    the same input would be sent again)."""

    messages: list[Message]
    input_hash: str


def _request(user_prompt: str) -> JudgeRequest:
    messages: list[Message] = [
        {"role": "system", "content": render_prompt("judge_system.j2")},
        {"role": "user", "content": user_prompt},
    ]
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode("utf-8")).hexdigest()
    return JudgeRequest(messages=messages, input_hash=digest)


def question_request(record: TurnRecord, criterion: str) -> JudgeRequest:
    """The judge's input for a question: criterion, user message, memory, tool calls, answer."""
    calls = [
        {
            "name": c.name,
            "arguments": json.dumps(c.arguments, ensure_ascii=False, sort_keys=True),
            "result": cut_result(json.dumps(c.result, ensure_ascii=False, default=str)),
        }
        for c in record.tool_calls
    ]
    prompt = render_prompt(
        "judge_question.j2",
        criterion=criterion,
        user_message=record.user_message,
        memory=record.memory_context or "",
        tool_calls=calls,
        answer=record.answer or "",
    )
    return _request(prompt)


def write_request(record: TurnRecord, note: str, file_before: str, file_after: str) -> JudgeRequest:
    """The judge's input for a write: the expectation's note, the turn, and the file change."""
    diff = "\n".join(
        difflib.unified_diff(
            file_before.splitlines(), file_after.splitlines(), "before", "after", lineterm=""
        )
    )
    transcript = Turn(messages=list(record.messages)).render() or record.user_message
    prompt = render_prompt(
        "judge_write.j2", criterion=note, transcript=transcript, diff=diff, file_after=file_after
    )
    return _request(prompt)


async def run_judge(
    model: ChatModel, request: JudgeRequest, *, timeout_s: float | None = DEFAULT_TIMEOUT_S
) -> JudgeResult:
    """Ask the judge once. Never raises: failures come back as verdict "error"."""
    started = time.perf_counter()
    base = {"model": model.name, "input_hash": request.input_hash}
    try:
        response = await asyncio.wait_for(
            model.chat(
                request.messages,
                schema=JUDGE_SCHEMA,
                max_tokens=JUDGE_MAX_TOKENS,
                temperature=0.0,
            ),
            timeout_s,
        )
    except TimeoutError:
        return JudgeResult(verdict="error", error=timed_out(timeout_s), **base)
    # any failure of the judge's back end is recorded as that judgement's error
    except Exception as exc:
        return JudgeResult(verdict="error", error=one_line(f"{type(exc).__name__}: {exc}"), **base)
    usage = {
        "prompt_tokens": response.prompt_tokens,
        "completion_tokens": response.completion_tokens,
        "cached_prompt_tokens": response.cached_prompt_tokens,
        "latency_s": response.latency_s or time.perf_counter() - started,
        "cached": response.cached,
    }
    try:
        verdict, reason = parse_judgement(response.content)
    except ValueError as exc:
        return JudgeResult(verdict="error", error=str(exc), **base, **usage)
    return JudgeResult(verdict=verdict, reason=reason, **base, **usage)


def parse_judgement(content: str | None) -> tuple[str, str]:
    """(verdict, reason) from the judge's JSON; ValueError (one line) when it is not that."""
    if not content or not content.strip():
        raise ValueError("judge returned no content")
    text = content.strip()
    if text.startswith("```"):  # some back ends fence JSON even under a schema
        text = text.strip("`").removeprefix("json").strip()
    try:
        data = json.loads(text)
    except ValueError:
        raise ValueError(f"judge answer is not JSON: {one_line(content)[:200]!r}") from None
    if not isinstance(data, dict) or data.get("verdict") not in VERDICTS:
        raise ValueError(
            f"judge answer has no verdict pass|fail|not-attempted: {one_line(content)[:200]!r}"
        ) from None
    reason = str(data.get("reason") or "")
    if len(reason) > REASON_CHARS - BOUND_SLACK:
        reason += f" …[at the {REASON_CHARS}-character bound: may be cut]"
    return str(data["verdict"]), one_line(reason)


class JudgeStrategy(Protocol):
    """One design of the question judge: how the criterion, the answer and the evidence are
    put to the model, and how its answers become one verdict."""

    name: str

    async def judge(
        self,
        model: ChatModel,
        record: TurnRecord,
        criterion: str,
        check: Verdict | None,
        *,
        timeout_s: float | None = DEFAULT_TIMEOUT_S,
    ) -> JudgeResult: ...

    def input_hash(self, record: TurnRecord, criterion: str, check: Verdict | None) -> str:
        """What decides whether a stored judgement can be reused."""
        ...


class SingleJudge:
    """One call: the whole criterion and the material, one verdict under a JSON schema."""

    name = "single"

    async def judge(
        self,
        model: ChatModel,
        record: TurnRecord,
        criterion: str,
        check: Verdict | None,
        *,
        timeout_s: float | None = DEFAULT_TIMEOUT_S,
    ) -> JudgeResult:
        return await run_judge(model, question_request(record, criterion), timeout_s=timeout_s)

    def input_hash(self, record: TurnRecord, criterion: str, check: Verdict | None) -> str:
        return question_request(record, criterion).input_hash


def cut_result(text: str) -> str:
    return text if len(text) <= RESULT_CHARS else text[:RESULT_CHARS] + " …(cut)"


def one_line(text: str) -> str:
    return " ".join(text.split())
