"""The scenario format (DESIGN §3) as pydantic models.

Files are validated strictly (`extra="forbid"`); cross-references (facts, tools, sessions,
`until` order, combined `order`) are checked by the loader, which also resolves combined
scenarios into a flat `ResolvedScenario` — the shape the runner and the saved run use.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt

from reference_memory import CAP

FORMAT_VERSION = 1
SUPPORTED_VERSIONS = (1,)
MEMORY_CAP = CAP  # the store's cap (DESIGN §1): a reference file must fit in it


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolResponse(Strict):
    """`when` + `result` (first match wins), or `default` (the fallback result)."""

    when: dict[str, Any] | None = Field(
        None, description="The arguments this response answers (first matching `when` wins)."
    )
    result: Any = Field(None, description="What the tool returns when `when` matches.")
    default: Any = Field(None, description="What the tool returns when no `when` matched (last).")


class Tool(Strict):
    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_\-]{0,63}$")
    description: str = ""
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}},
        description="JSON Schema of the arguments (type: object).",
    )
    responses: list[ToolResponse] = Field(default_factory=list)


class Fact(Strict):
    """A fact memory should hold. `match` is any-of: plain strings are case-insensitive
    substrings, `/.../` strings are regular expressions (case-insensitive)."""

    match: list[str] = Field(
        min_length=1, description='Any-of: plain = case-insensitive substring, "/re/" = regex.'
    )
    user_tagged: StrictBool = Field(False, description="The fact must sit on a [user] line.")
    section: str | None = Field(None, description="The `## ` section the fact must sit in.")
    until: str | None = Field(
        None, description="A turn id after which the fact may go (superseded)."
    )
    description: str = ""


class Expect(Strict):
    note: str = Field("", description="What a good write does on this turn, for reviewers.")
    records: list[str] = Field(
        default_factory=list, description="Fact ids that must be in the file after this turn."
    )
    forbids: list[str] = Field(
        default_factory=list, description='Patterns that must not be in the file ("/re/" = regex).'
    )
    unchanged: StrictBool = Field(False, description="Nothing worth keeping: file must not change.")


class ControlCall(Strict):
    """A tool call a control answer makes; its result comes from the scenario's fixtures."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ControlAnswer(Strict):
    """A control answer with the tool calls that go with it."""

    answer: str
    tool_calls: list[ControlCall] = Field(default_factory=list)


class Controls(Strict):
    """Answers whose verdict is known (DESIGN §7.4): `pass` ones must pass the question's
    checks and `fail` ones must fail them (`memeval scenarios calibrate`). Each is the answer
    text, or `{answer, tool_calls: [{name, arguments}]}`."""

    model_config = ConfigDict(extra="forbid", serialize_by_alias=True, validate_by_name=True)

    pass_: list[str | ControlAnswer] = Field(
        default_factory=list, alias="pass", description="Answers that meet the criterion."
    )
    fail: list[str | ControlAnswer] = Field(
        default_factory=list,
        description=(
            "Answers that must fail: the answer without memory, and the ones sloppy memory"
            " gives (a leaked rule, a stale value, a wrong lesson)."
        ),
    )

    def answers(self, known: str) -> list[ControlAnswer]:
        """The `pass` or `fail` answers, each as a ControlAnswer."""
        items = self.pass_ if known == "pass" else self.fail
        return [ControlAnswer(answer=a) if isinstance(a, str) else a for a in items]


class AnswerF1(Strict):
    """Token F1 of the answer against a gold answer (LoCoMo's metric): always computed and
    recorded; a check only when `min` is given."""

    gold: str = Field(min_length=1, description="The gold answer.")
    min: float | None = Field(
        None,
        ge=0,
        le=1,
        strict=True,
        description="Fail the question below this F1 (without it the score is only reported).",
    )


class Question(Strict):
    type: Literal["memory-dependent", "memory-corruptible"]
    criterion: str = Field(description="What a right answer does; the judge grades against it.")
    answer_matches: list[list[str]] = Field(
        default_factory=list, description="All groups must match; any-of within a group."
    )
    answer_excludes: list[str] = Field(default_factory=list)
    must_call: list[str] = Field(default_factory=list, description="Tools the agent must call.")
    must_not_call: list[str] = Field(default_factory=list)
    call_matches: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description=(
            "Tool -> {argument: pattern}: some call of the tool must have every listed"
            " argument match its pattern (a value that is not a string is matched as JSON,"
            " so rows: 10 is '10'). What the agent did, where the answer's words could just"
            " repeat the request."
        ),
    )
    facts: list[str] = Field(
        default_factory=list, description="Fact ids the answer depends on (optional)."
    )
    answer_f1: AnswerF1 | None = Field(
        None, description="Token F1 against a gold answer: reported, and a check with `min`."
    )
    tags: list[str] = Field(
        default_factory=list,
        description="Labels results are also counted by, e.g. a benchmark's category.",
    )
    controls: Controls | None = Field(
        None, description="Answers whose verdict is known, for calibrating checks and judge."
    )


class TranscriptStep(Strict):
    """One step of a seed turn's scripted transcript: a tool call with its result, or an
    assistant reply."""

    tool_call: dict[str, Any] | None = Field(
        None, description="{name, arguments}: a call of one of the scenario's tools."
    )
    result: Any = None
    assistant: str | None = None


class TurnSpec(Strict):
    id: str
    user: str
    transcript: list[TranscriptStep] = Field(default_factory=list)  # seed turns
    expect: Expect | None = None
    question: Question | None = None  # eval turns


class Session(Strict):
    id: str
    kind: Literal["seed", "eval"]
    title: str = ""
    reference_memory: str | None = Field(
        None, description="Eval sessions: the file a good pipeline would hold at the start."
    )
    initial_memory: str | None = Field(
        None,
        description=(
            "The memory file this session starts from: set before its first turn (file"
            " systems only; in the skeleton, <= the 8,000-char cap)."
        ),
    )
    think_time_s: float = Field(
        0.0,
        ge=0,
        strict=True,
        allow_inf_nan=False,
        description=(
            "Seconds the user takes between this session's turns, from the agent's answer to"
            " the next message (0 = back-to-back). Matters under --async-memory, where the"
            " next turn may read memory before the previous turn's update has landed."
        ),
    )
    turns: list[TurnSpec] = Field(min_length=1)


class Scenario(Strict):
    """A scenario file. A combined scenario has `include` and `order` as well."""

    version: StrictInt = FORMAT_VERSION
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9\-]{0,63}$")
    title: str = ""
    description: str = ""
    user: str
    space: str
    tools: list[Tool] = Field(default_factory=list)
    facts: dict[str, Fact] = Field(default_factory=dict)
    sessions: list[Session] = Field(default_factory=list)
    include: list[str] = Field(
        default_factory=list, description="Combined: names of the scenarios whose sessions it uses."
    )
    order: list[str] = Field(
        default_factory=list,
        description='Combined: every session once, as "scenario/session" or an own session id.',
    )
    reference_memories: dict[str, str] = Field(
        default_factory=dict,
        description=(
            'Combined: "scenario/session" of an included eval session -> the reference file at'
            " its start in this run (memory here holds every project), replacing its own."
        ),
    )


# ---- resolved form: what the runner replays and run.json records --------------------------


class ResolvedSession(BaseModel):
    """A session ready to replay. In a combined scenario, ids from included scenarios are
    prefixed with their scenario: session "book-summary/s1", turn "book-summary/s1t1"."""

    id: str
    source: str  # the scenario the session was written in
    kind: Literal["seed", "eval"]
    title: str = ""
    reference_memory: str | None = None
    initial_memory: str | None = None  # the file set before the first turn (file systems)
    think_time_s: float = 0.0  # the user's pause between turns (used under --async-memory)
    tools: list[Tool] = Field(default_factory=list)  # the fixture tools live turns may call
    turns: list[TurnSpec]


class ResolvedScenario(BaseModel):
    """A scenario flattened for replay. Fact ids (and `records`/`until` references) from an
    included scenario are prefixed like sessions: "book-summary/seventy-rows"."""

    name: str
    title: str = ""
    user: str
    space: str
    path: str = ""
    facts: dict[str, Fact] = Field(default_factory=dict)
    sessions: list[ResolvedSession]
    description: str = ""
    files: list[str] = Field(default_factory=list)  # every scenario file read, this one first
    tools: list[Tool] = Field(default_factory=list)  # every fixture tool, for reports

    def turn_ids(self) -> list[str]:
        return [t.id for s in self.sessions for t in s.turns]
