"""The scenario format (DESIGN §3) as pydantic models.

Files are validated strictly (`extra="forbid"`); cross-references (facts, tools, sessions,
`until` order, combined `order`) are checked by the loader, which also resolves combined
scenarios into a flat `ResolvedScenario` — the shape the runner and the saved run use.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

FORMAT_VERSION = 1


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolResponse(Strict):
    """`when` + `result` (first match wins), or `default` (the fallback result)."""

    when: dict[str, Any] | None = None
    result: Any = None
    default: Any = None


class Tool(Strict):
    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_\-]{0,63}$")
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    responses: list[ToolResponse] = Field(default_factory=list)


class Fact(Strict):
    """A fact memory should hold. `match` is any-of: plain strings are case-insensitive
    substrings, `/.../` strings are regular expressions (case-insensitive)."""

    match: list[str] = Field(min_length=1)
    user_tagged: bool = False
    section: str | None = None
    until: str | None = None  # a turn id after which the fact may go (superseded)
    description: str = ""


class Expect(Strict):
    note: str = ""
    records: list[str] = Field(default_factory=list)
    forbids: list[str] = Field(default_factory=list)
    unchanged: bool = False


class Question(Strict):
    type: Literal["memory-dependent", "memory-corruptible"]
    criterion: str
    answer_matches: list[list[str]] = Field(default_factory=list)  # all groups; any-of within
    answer_excludes: list[str] = Field(default_factory=list)
    must_call: list[str] = Field(default_factory=list)
    must_not_call: list[str] = Field(default_factory=list)


class TranscriptStep(Strict):
    """One step of a seed turn's scripted transcript: a tool call with its result, or an
    assistant reply."""

    tool_call: dict[str, Any] | None = None  # {name, arguments}
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
    reference_memory: str | None = None  # eval sessions: the file a good pipeline would hold
    turns: list[TurnSpec] = Field(min_length=1)


class Scenario(Strict):
    """A scenario file. A combined scenario has `include` and `order` as well."""

    version: int = FORMAT_VERSION
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9\-]{0,63}$")
    title: str = ""
    description: str = ""
    user: str
    space: str
    tools: list[Tool] = Field(default_factory=list)
    facts: dict[str, Fact] = Field(default_factory=dict)
    sessions: list[Session] = Field(default_factory=list)
    include: list[str] = Field(default_factory=list)
    order: list[str] = Field(default_factory=list)  # "scenario/session" or an own session id


# ---- resolved form: what the runner replays and run.json records --------------------------


class ResolvedSession(BaseModel):
    """A session ready to replay. In a combined scenario, ids from included scenarios are
    prefixed with their scenario: session "book-summary/s1", turn "book-summary/s1t1"."""

    id: str
    source: str  # the scenario the session was written in
    kind: Literal["seed", "eval"]
    title: str = ""
    reference_memory: str | None = None
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

    def turn_ids(self) -> list[str]:
        return [t.id for s in self.sessions for t in s.turns]
