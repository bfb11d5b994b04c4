"""The `cascade` updater, for small models: tiny constrained questions; code writes the ops.

Per user sentence: what is it (a request, chat, or a fact of one of six kinds)? Per sentence of
the assistant's own replies (a finding it reports after "I checked X:" taken on its own): live
numbers, its own action, an example, or progress / finding / asset? A kept sentence becomes
the fact. Naming the kinds never kept, rather than asking yes/no, is what stops small models
answering "keep" to everything; worked examples after the instruction teach the kinds (without
them the 1.5B model called nearly every finding an "example"); and code settles what wording
settles better than a small model: questions and requests are never facts, "always / never /
from now on / every week" marks a lasting fact, time windows mark live numbers, the assistant
repeating the user is not news, half a sentence (trailing off, or an answer stopped mid-way)
is no fact, and a sentence whose fact memory already holds is not asked about.

Tool results are never shown to the model, so text planted in them cannot reach it; what tools
discovered arrives through the assistant's statements of it (and then through the safety gate
like every op). On a turn that called no tool the assistant's sentences are not asked about:
they restate memory or the user, or are its own conclusions, and none of those is a finding.
Near an existing line the model is asked same / update / different, so a changed value
replaces its old line and a repeated fact is not added twice. All questions share one growing
chat after the static instruction and examples, so a prefix cache serves every call.
(MEASUREMENTS.md.)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from functools import cache
from typing import Any

from reference_memory.calls import Caller, ModelCallError
from reference_memory.cascade_place import (
    Fact,
    Plan,
    bullets,
    duplicate_of,
    related,
    section_lines,
    turn_project,
    under_other_subsection,
)
from reference_memory.cascade_text import (
    TITLE_WORDS,
    acknowledges,
    asks_latest_event,
    asks_now,
    clean_fact,
    clean_title,
    faithful,
    first_person,
    goal_title,
    keeps,
    lasting,
    latest_event,
    measures_goal,
    names_when,
    new_values,
    numbers,
    one_off,
    overlap,
    preamble,
    recalls,
    refetchable,
    reported,
    restates,
    sentences,
    shows_examples,
    states_intent,
    states_target,
    strip_lead,
    time_window,
    unfinished,
    word_count,
)
from reference_memory.edits import EditOp
from reference_memory.model import Message
from reference_memory.report import Attempt, UpdateReport
from reference_memory.safety_rules import reports_injection
from reference_memory.templates import render
from reference_memory.turn import Turn
from reference_memory.updater import UpdateInput, UpdaterGaveUp

USER_KINDS = {
    "profile": "User Profile",
    "goal": "Goals",
    "project": "Projects",
    "asset": "Assets",
    "rule": "Conventions",
    "correction": "Interaction corrections",
}
ASSISTANT_KINDS = {"progress": "Goals", "finding": "Projects", "asset": "Assets"}
USER_CHOICES = ("request", "chat", *USER_KINDS)
"""What a user sentence is: the first two are never kept; the rest name the fact's section.
(Questions are settled by their question mark, never asked about.)"""
ASSISTANT_CHOICES = ("finding", "progress", "asset", "example", "action", "live")
"""What a sentence of the assistant is: live numbers, its own actions and single examples are
never kept ("progress" is offered only when the file has a goal to measure against). Kept kinds
come first: offered last, the 1.5B model almost never picked them (held-in sentences: 11 of 24
right with them last, 18 of 24 first)."""
RELATIONS = ("different", "same", "update")
FACT_CHARS = 200
TITLE_SHARE = 0.75  # of a goal heading's words, found in the user's message
SENTENCE_CHARS = 400  # a sentence kept as it stands may be longer than a rewritten fact


def _choice(field: str, values: tuple[str, ...] | list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {field: {"type": "string", "enum": list(values)}},
        "required": [field],
        "additionalProperties": False,
    }


FACT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"fact": {"type": "string", "minLength": 3, "maxLength": FACT_CHARS}},
    "required": ["fact"],
    "additionalProperties": False,
}
TITLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"title": {"type": "string", "minLength": 3, "maxLength": 60}},
    "required": ["title"],
    "additionalProperties": False,
}


class _Budget(Exception):
    """The per-turn question budget ran out."""


class _Chat:
    """One growing conversation: static instruction, then question/answer pairs."""

    def __init__(self, caller: Caller, role: str, budget: int, limit: int) -> None:
        self.caller, self.role, self.budget, self.limit = caller, role, budget, limit
        self.start: list[Message] = [
            {"role": "system", "content": render("cascade_system")},
            *example_messages(),
        ]
        self.messages: list[Message] = list(self.start)
        self.pending = ""  # the message being asked about, sent with the next question
        self.asked = self.answered = 0
        self.failures: list[str] = []

    def show(self, intro: str) -> None:
        """Start on a new message; a chat grown past `limit` characters starts over."""
        if sum(len(str(m["content"])) for m in self.messages) > self.limit:
            self.messages = list(self.start)
        self.pending = intro

    async def ask(self, prompt: str, schema: Mapping[str, Any], field: str) -> str:
        """The constrained answer to one question; ModelCallError if it fails or is off-schema."""
        if self.asked >= self.budget:
            raise _Budget
        self.asked += 1
        content = f"{self.pending}\n\n{prompt}" if self.pending else prompt
        messages = [*self.messages, {"role": "user", "content": content}]
        completion, data = await self.caller.json(self.role, messages, schema)
        value = data.get(field) if isinstance(data, dict) else None
        allowed = schema["properties"][field].get("enum")
        if not isinstance(value, str) or (allowed and value.strip().lower() not in allowed):
            reason = f"no valid {field!r} in {completion.text[:120]!r}"
            self.caller.report.calls[-1].error = reason
            raise ModelCallError(self.role, reason, completion.text)
        self.messages = [*messages, {"role": "assistant", "content": completion.text}]
        self.pending = ""
        self.answered += 1
        return value.strip().lower() if allowed else value


class CascadeUpdater:
    """Questions per sentence; code maps the answers to section, `[user]`, anchor and ops."""

    name = "cascade"
    uses_summary = False
    role = "updater"

    def __init__(
        self,
        *,
        rewrite: bool = False,
        max_questions: int = 60,
        max_sentences: int = 12,
        chat_chars: int = 12000,
    ) -> None:
        self.rewrite = rewrite  # ask the model to restate each kept sentence as a short fact
        self.max_questions = max_questions
        self.max_sentences = max_sentences
        self.chat_chars = chat_chars

    async def propose(self, job: UpdateInput, caller: Caller, report: UpdateReport) -> list[EditOp]:
        chat = _Chat(caller, self.role, self.max_questions, self.chat_chars)
        walk = _Walk(job.file, chat, self, job.turn)
        try:
            await walk.turn(job.turn.messages)
        except _Budget:
            walk.log.append(f"stopped: the {self.max_questions}-question budget ran out")
        ops = walk.plan.ops()
        attempt = Attempt(number=1, raw="\n".join(walk.log + walk.plan.notes))
        attempt.ops = [op.to_dict() for op in ops]
        report.attempts.append(attempt)
        if chat.failures:
            report.errors.append(
                f"cascade: {len(chat.failures)} of {chat.asked} questions failed; their "
                f"sentences were skipped (first: {chat.failures[0]})"
            )
        if chat.asked and not chat.answered:
            attempt.error = f"every cascade question failed (first: {chat.failures[0]})"
            raise UpdaterGaveUp(attempt.error, answered=False)
        return ops


class _Walk:
    """One turn's pass over its messages, collecting decisions into a Plan."""

    def __init__(self, file: str, chat: _Chat, config: CascadeUpdater, turn: Turn) -> None:
        self.file, self.chat, self.config = file, chat, config
        self.plan = Plan(file)
        self.log: list[str] = []
        self.said: list[str] = []  # the user's messages so far this turn
        self.found: list[str] = []  # tool results so far (read by code, never shown)
        self.no_finding = _why_no_finding(turn)  # why the reply can hold no finding, or ""
        self.projects = turn.projects()  # the `project` arguments of the turn's tool calls
        self.project = turn_project(self.projects, "\n".join(turn.user_messages()))  # the named one

    async def turn(self, messages: list[Message]) -> None:
        for message in messages:
            text = _text(message.get("content"))
            if not text.strip():
                continue  # tool calls without text
            if message.get("role") == "tool":
                self.found.append(text)  # never shown to the model
            elif message.get("role") == "user":
                await self.user(text)
            elif message.get("role") == "assistant":
                await self.assistant(text)

    async def user(self, text: str) -> None:
        self.said.append(text)
        self.plan.context = "\n".join(self.said)
        self.chat.show(render("cascade_user_message", text=text))
        pieces = sentences(text)[: self.config.max_sentences]
        asks = [_asks(piece) for piece in pieces]
        for index, sentence in enumerate(pieces):
            kinds = user_kinds(sentence, asked_after=any(asks[index + 1 :]))
            if isinstance(kinds, list):
                kinds = self._known(sentence) or kinds
            if isinstance(kinds, str):
                self.log.append(f"skip {sentence[:60]!r}: {kinds}")
                continue
            prompt = render("cascade_user_sentence", sentence=strip_lead(sentence), kinds=kinds)
            kind = await self._ask(sentence, prompt, _choice("kind", kinds))
            if kind == "goal" and (lasting(sentence) or not states_target(sentence)):
                # a goal names a target to reach; "always 70 rows" or "count edited as
                # approved" is how to work, which small models often call a goal
                kind = "rule"
                self.log.append("  (no target, or worded as a standing rule: rule)")
            if kind not in USER_KINDS:
                continue
            fact = await self._fact(sentence, text)
            await self._decide(Fact(fact, user=True, section=USER_KINDS[kind]), sentence)

    async def assistant(self, text: str) -> None:
        self.chat.show(render("cascade_assistant_message", text=text))
        if self.no_finding:
            self.log.append(f"skip the assistant's message: {self.no_finding}")
            return
        goals = section_lines(self.file, "Goals") + [
            f.line for f in self.plan.adds if f.section == "Goals"
        ]
        kinds = [k for k in ASSISTANT_CHOICES if goals or k != "progress"]
        for piece in sentences(text)[: self.config.max_sentences]:
            sentence = reported(piece)  # "I checked X: <finding>" -> the finding
            why = _skip_assistant(sentence, "\n".join(self.said), "\n".join(self.found))
            why = why or self._known(sentence)
            if why:
                self.log.append(f"skip {sentence[:60]!r}: {why}")
                continue
            prompt = render(
                "cascade_assistant_sentence", sentence=sentence, kinds=kinds, goals=goals[-8:]
            )
            kind = await self._ask(sentence, prompt, _choice("kind", kinds))
            if kind not in ASSISTANT_KINDS:
                continue
            fact = await self._fact(sentence, text)
            progress = kind == "progress" and bool(numbers(fact))
            section = ASSISTANT_KINDS["finding" if kind == "progress" and not progress else kind]
            await self._decide(Fact(fact, user=False, section=section, progress=progress), sentence)

    def _known(self, sentence: str) -> str:
        """Why asking about a sentence cannot change the plan ("" when it can): `_dropped` on
        the fact it would become. Only when the sentence itself is the fact (with `rewrite`
        the model's restatement may differ)."""
        if self.config.rewrite:
            return ""
        return self._dropped(clean_fact(strip_lead(sentence), limit=SENTENCE_CHARS))

    def _dropped(self, fact: str) -> str:
        """Why `_decide` drops a fact whatever the model answers ("" when it does not): it is
        re-fetchable data, or already in the file or this turn's plan."""
        found = refetchable(fact)
        if found:
            return f"re-fetchable data {found!r}"
        seen = duplicate_of(fact, bullets(self.file) + self.plan.lines())
        return f"already in memory as {seen!r}" if seen is not None else ""

    async def _ask(self, sentence: str, prompt: str, schema: Mapping[str, Any]) -> str:
        field = next(iter(schema["properties"]))
        try:
            answer = await self.chat.ask(prompt, schema, field)
        except ModelCallError as exc:
            self.chat.failures.append(f"{field} for {sentence[:40]!r}: {exc.reason}")
            self.log.append(f"{sentence[:60]!r}: {field} failed: {exc.reason}")
            return ""
        if field not in ("fact", "title"):
            self.log.append(f"{sentence[:60]!r}: {field}={answer}")
        return answer

    async def _fact(self, sentence: str, source: str) -> str:
        """The sentence itself (lead-in words dropped); with `rewrite`, the model's one-line
        fact unless it invents, changes or drops a number or a name."""
        fallback = clean_fact(strip_lead(sentence), limit=SENTENCE_CHARS)
        if not self.config.rewrite:
            self.log.append(f"  fact: {fallback!r}")
            return fallback
        raw = clean_fact(await self._ask(sentence, render("cascade_fact"), FACT_SCHEMA))
        if raw and word_count(raw) >= 3 and faithful(raw, source) and keeps(raw, sentence):
            self.log.append(f"  fact: {raw!r}")
            return raw
        self.log.append(f"  fact: {fallback!r} (the sentence; model wrote {raw!r})")
        return fallback

    async def _decide(self, fact: Fact, sentence: str) -> None:
        """Drop re-fetchable data and duplicates; replace a line whose value changed; else add."""
        why = self._dropped(fact.text)
        if why:
            self.log.append(f"  drop: {why}")
            return
        replaced = {old for old, _ in self.plan.replaces}
        # a user's new standing rule may supersede a line wherever it sits (the model's kind
        # for it, and so its section, is the least reliable answer a small model gives)
        anywhere = fact.user and lasting(sentence)
        heard = "\n".join([*self.said, fact.text])
        for line in related(fact, self.file, anywhere=anywhere):
            if line in replaced:
                continue
            if under_other_subsection(self.file, line, heard):
                # "get it under 8%" said about one project is no new value of another's goal
                self.log.append(f"  not compared with {line!r}: its subsection is not named")
                continue
            prompt = render("cascade_compare", line=line, fact=fact.line)
            relation = await self._ask(sentence, prompt, _choice("relation", RELATIONS))
            if relation == "update" and not new_values(fact.text, line):
                relation = "same"  # nothing the line lacks: a restatement, not a change
                self.log.append("  (update brings no new value: same)")
            if relation == "same":
                self.log.append(f"  drop: same as {line!r}")
                return
            if relation == "update" and fact.progress:
                self.log.append("  (a checkpoint is history: added, never replacing)")
            elif relation == "update":
                self.log.append(f"  replace {line!r}")
                self.plan.replaces.append((line, fact))
                return
        if fact.user and fact.section == "Goals" and not fact.progress:
            fact = replace(fact, title=await self._title(sentence))
        elif fact.section == "Projects":
            # the project the user named, else the one the fact itself names ("genre is
            # empty on every agent-prod span" found by a call on agent-prod)
            project = self.project or turn_project(self.projects, fact.text)
            fact = replace(fact, title=project) if project else fact
        self.plan.adds.append(fact)
        self.log.append(
            f"  add under {fact.section}"
            + (" (goal progress)" if fact.progress else "")
            + (f" as '### {fact.title}'" if fact.title else "")
        )

    async def _title(self, sentence: str) -> str:
        """A new goal's `### ` heading: the model's, when it is short, says it in the user's
        words (three in four of its words are the message's) and invents no number or name;
        else made from the goal's own words."""
        message = self.said[-1] if self.said else sentence
        raw = clean_title(await self._ask(sentence, render("cascade_title"), TITLE_SCHEMA))
        if (
            2 <= word_count(raw) <= TITLE_WORDS
            and faithful(raw, message)
            and overlap(raw, message)[1] >= TITLE_SHARE
        ):
            self.log.append(f"  title: {raw!r}")
            return raw
        fallback = goal_title(strip_lead(sentence))
        self.log.append(f"  title: {fallback!r} (from the goal; model wrote {raw!r})")
        return fallback


def _why_no_finding(turn: Turn) -> str:
    """A finding is what a tool turned up. With no tool called, the assistant's sentences
    restate memory or the user, or are its own conclusions; when every call failed, they
    report the failure ("project X not found"), which says nothing lasting; when the user
    called the turn a one-off ("this time"), what it turned up is the exception's; when the
    user asked when the latest event happened, the reply describes that event: live data."""
    if not turn.called_tools():
        return "no tool was called this turn"
    if turn.tools_all_failed():
        return "every tool call this turn returned an error"
    if any(one_off(text) for text in turn.user_messages()):
        return "the user marked this turn a one-off"
    if any(asks_latest_event(text) for text in turn.user_messages()):
        return "the user asked when the latest event happened: the reply is live data"
    return ""


def user_kinds(sentence: str, asked_after: bool = False) -> list[str] | str:
    """The kinds a user sentence may be, or why it is not asked about (a str). `asked_after`:
    a later sentence of the same message is a question or a request."""
    if word_count(sentence) < 4:
        return "too short"
    if unfinished(sentence):
        return "unfinished"
    if sentence.rstrip().endswith("?"):
        return "a question"
    if preamble(sentence):
        return "announces what follows"
    if lasting(sentence):
        return list(USER_KINDS)  # worded as a standing rule: a fact, whatever else it is
    if one_off(sentence):
        return "a one-off"
    if asks_now(sentence):
        return "a request"
    if asked_after and states_intent(sentence):
        # "I'm planning to add X. Anything I should know?": what the question is for
        return "the context of the question or request that follows"
    return list(USER_CHOICES)


def _asks(sentence: str) -> bool:
    """Whether the sentence is a question or a request."""
    return sentence.rstrip().endswith("?") or asks_now(sentence)


def _skip_assistant(sentence: str, said: str = "", found: str = "") -> str:
    """Why a sentence of the assistant is not asked about ("" when it is). `said`: the user's
    words this turn; `found`: the turn's tool results."""
    if word_count(sentence) < 5:
        return "too short"
    if unfinished(sentence):
        return "unfinished"
    if first_person(sentence):
        return "about what the assistant did or chose"
    if acknowledges(sentence) or restates(sentence, said):
        return "restates what the user said"
    if recalls(sentence):
        return "says what memory holds"
    if reports_injection(sentence):
        return "reports text planted for an AI"
    if time_window(sentence) and not measures_goal(sentence):
        return "live numbers for a time window"
    if shows_examples(sentence):
        return "shows examples"
    if latest_event(sentence):
        return "when the latest event happened: live data"
    if names_when(sentence) and not names_when(found) and not names_when(said):
        # a small model asked "when" answers with a time even when its tools gave none
        return "a time or date that no tool result or user message gives"
    return ""


@cache
def example_messages() -> tuple[Message, ...]:
    """The worked examples (prompts/cascade_examples.j2) as question/answer pairs, asked the way
    the real questions are, so the model sees each answer given once before its own turn."""
    goals: list[str] = []
    pairs: list[Message] = []
    for line in render("cascade_examples").splitlines():
        parts = [part.strip() for part in line.split("|")]
        if parts[0] == "goal" and len(parts) == 2:
            goals.append(parts[1])
            continue
        if parts[0] == "compare" and len(parts) == 4:
            field, choices = "relation", list(RELATIONS)
            prompt = render("cascade_compare", line=parts[2], fact=parts[3])
        elif parts[0] == "user" and len(parts) == 3:
            field, choices = "kind", list(USER_CHOICES)
            prompt = render("cascade_user_sentence", sentence=parts[2], kinds=choices)
        elif parts[0] == "assistant" and len(parts) == 3:
            field, choices = "kind", list(ASSISTANT_CHOICES)
            prompt = render(
                "cascade_assistant_sentence", sentence=parts[2], kinds=choices, goals=goals
            )
        else:
            raise ValueError(f"cascade_examples: bad line {line!r}")
        if parts[1] not in choices:
            raise ValueError(f"cascade_examples: {parts[1]!r} is not one of {choices}")
        pairs.append({"role": "user", "content": prompt})
        pairs.append({"role": "assistant", "content": json.dumps({field: parts[1]})})
    return tuple(pairs)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""
