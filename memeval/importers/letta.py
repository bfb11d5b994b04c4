"""Letta's core-memory-update set (JSONL) to a scenario: facts, a correction, the question.

Each row holds a question (`input`), its updated answer (`ground_truth`) and, under
`agent_args.extra`, the `facts` first stated, the `contradicting_fact` that overrides some of
them (`supporting_fact_indices`) and the `contradicting_answer`. Rows run one after another
in one memory (one user, one space), each as:
- a seed session stating the facts, when they differ from the previous row's;
- a seed session in which the user states the contradicting fact;
- an eval session asking the question: memory-dependent on the updated answer.

Deterministic checks are added only where they can be exact:
- a short updated answer (at most three words) becomes `answer_matches`, and when it
  appears in the correction but in none of the first facts, a tracked fact the correction
  turn must record (`until` the next correction of the same facts, which may supersede it);
- the superseded answer is not a field of the set: it is read off the two sentences when the
  correction swaps exactly the answer's words for others in one place ("fluent in Spanish" ->
  "fluent in Portuguese"), and then goes into `answer_excludes` (a stale-fact check) and into
  a fail control. Everything else is graded by the judge on the criterion written here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

from memeval.errors import ConfigError
from memeval.importers.common import Source, need, parse_jsonl, read_bytes, slug

LICENCE = "Letta's evaluation sets (letta-ai/letta-evals) are released under Apache-2.0"
WORD = re.compile(r"[\w'’-]+")
SHORT_ANSWER_WORDS = 3
FACTS_NOTE = "The user states these facts: a good memory keeps them."
DONT_KNOW = "I don't know."


@dataclass(frozen=True)
class Row:
    number: int  # 1-based, in the file's order
    question: str
    answer: str
    facts: tuple[str, ...]
    correction: str
    supporting: tuple[int, ...]


def import_letta(path: Path, rows: int | None = None) -> tuple[dict[str, Any], Source]:
    """The scenario document for the first `rows` rows of a Letta update file."""
    raw, sha = read_bytes(path)
    parsed = parse_jsonl(path, raw)
    if not parsed:
        raise ConfigError(f"{path.name}: holds no rows (expected one JSON object per line)")
    if rows is not None and not 1 <= rows <= len(parsed):
        raise ConfigError(
            f"--rows {rows}: {path.name} has {len(parsed)} rows (valid: 1-{len(parsed)})"
        )
    kept = [_row(item, n, f"{path.name}: row {n}") for n, item in enumerate(parsed, start=1)]
    kept = kept[: rows or len(kept)]
    facts, sessions = _build(kept)
    source = Source(
        "Letta core-memory-update", path.name, sha, f"rows 1-{len(kept)} of {len(parsed)}", LICENCE
    )
    doc: dict[str, Any] = {
        "version": 1,
        "name": f"letta-{slug(path.stem, 30)}",
        "title": f"Letta core-memory update: {len(kept)} rows",
        "description": (
            f"{source.line()}. Per row: the facts (when new), then a correction the user"
            " states, then the question, whose right answer is the corrected one. Short"
            " answers are checked exactly and the superseded answer is excluded where it can"
            " be read off the two sentences; the judge grades the rest on the criterion."
        ),
        "user": "letta-user",
        "space": "core-memory-update",
        "facts": facts,
        "sessions": sessions,
    }
    return doc, source


def _row(item: Any, number: int, where: str) -> Row:
    item = need(item, dict, where, "a JSON object")
    args = need(item.get("agent_args"), dict, where, "`agent_args` {extra: {...}}")
    extra = need(args.get("extra"), dict, f"{where}: agent_args", "`extra` {facts, ...}")
    facts = need(extra.get("facts"), list, f"{where}: agent_args.extra", "a `facts` list")
    if not facts or not all(isinstance(f, str) and f.strip() for f in facts):
        raise ConfigError(f"{where}: agent_args.extra.facts: expected a list of non-empty strings")
    indices = need(
        extra.get("supporting_fact_indices"),
        list,
        f"{where}: agent_args.extra",
        "`supporting_fact_indices` (a list of fact numbers)",
    )
    bad = [i for i in indices if not isinstance(i, int) or not 0 <= i < len(facts)]
    if bad:
        raise ConfigError(
            f"{where}: supporting_fact_indices {bad} are not fact numbers"
            f" (valid: 0-{len(facts) - 1})"
        )
    correction = need(
        extra.get("contradicting_fact"), str, f"{where}: agent_args.extra", "`contradicting_fact`"
    )
    return Row(
        number=number,
        question=need(item.get("input"), str, where, "the question (`input`)").strip(),
        answer=str(
            need(item.get("ground_truth"), (str, int, float), where, "`ground_truth`")
        ).strip(),
        facts=tuple(f.strip() for f in facts),
        correction=correction.strip().strip('"').strip(),
        supporting=tuple(indices),
    )


def _build(rows: list[Row]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    facts: dict[str, Any] = {}
    sessions: list[dict[str, Any]] = []
    previous: tuple[str, ...] | None = None
    for position, row in enumerate(rows):
        r = f"r{row.number}"
        if row.facts != previous:
            sessions.append(_facts_session(row))
            previous = row.facts
        short = len(WORD.findall(row.answer)) <= SHORT_ANSWER_WORDS and bool(
            WORD.search(row.answer)
        )
        stated = " ".join(row.facts).lower()
        expect: dict[str, Any] = {"note": "The correction replaces what memory held about it."}
        if (
            short
            and row.answer.lower() in row.correction.lower()
            and row.answer.lower() not in stated
        ):
            fid = f"{r}-answer"
            fact: dict[str, Any] = {
                "match": [literal(row.answer)],
                "description": f"row {row.number}: the corrected answer",
            }
            if (later := _next_correction(rows, position)) is not None:
                fact["until"] = f"r{later.number}-correction"
            facts[fid] = fact
            expect["records"] = [fid]
        sessions.append(
            {
                "id": f"{r}-update",
                "kind": "seed",
                "title": f"Row {row.number}: a correction",
                "turns": [
                    {
                        "id": f"{r}-correction",
                        "user": f"An update to what I told you: {row.correction}",
                        "transcript": [{"assistant": "Thanks, I've noted the correction."}],
                        "expect": expect,
                    }
                ],
            }
        )
        sessions.append(
            {
                "id": f"{r}-ask",
                "kind": "eval",
                "title": f"Row {row.number}: the question",
                "turns": [
                    {
                        "id": f"{r}-q",
                        "user": row.question,
                        "question": _question(row, short, _corrected_before(rows, position)),
                    }
                ],
            }
        )
    return facts, sessions


def _facts_session(row: Row) -> dict[str, Any]:
    listed = "\n".join(f"- {fact}" for fact in row.facts)
    return {
        "id": f"r{row.number}-facts",
        "kind": "seed",
        "title": f"Row {row.number}: the facts",
        "turns": [
            {
                "id": f"r{row.number}-facts-t1",
                "user": f"Some facts about people I know; please keep them in mind:\n{listed}",
                "transcript": [{"assistant": "Got it, I'll keep these in mind."}],
                "expect": {"note": FACTS_NOTE},
            }
        ],
    }


def _next_correction(rows: list[Row], position: int) -> Row | None:
    """The next row correcting one of the same facts (it may supersede this row's answer)."""
    row = rows[position]
    for later in rows[position + 1 :]:
        if later.facts != row.facts:
            return None
        if set(later.supporting) & set(row.supporting):
            return later
    return None


def _corrected_before(rows: list[Row], position: int) -> bool:
    """Whether an earlier row of the same run of facts corrected one of the same facts (then
    the first-stated sentence no longer says what memory held before this correction)."""
    row = rows[position]
    for earlier in reversed(rows[:position]):
        if earlier.facts != row.facts:
            return False
        if set(earlier.supporting) & set(row.supporting):
            return True
    return False


def superseded_answer(row: Row) -> str | None:
    """The answer the correction replaced, read off one supporting fact: the words of the
    fact that sit where the answer's words sit in the correction, when the two sentences line
    up around them ("speaks Tamil and French" -> "speaks Tamil and German"); else None."""
    target = [w.lower() for w in WORD.findall(row.answer)]
    new = WORD.findall(row.correction)
    new_lower = [w.lower() for w in new]
    span = _find(new_lower, target)
    if span is None:
        return None
    for index in row.supporting:
        old = WORD.findall(row.facts[index])
        matcher = SequenceMatcher(a=[w.lower() for w in old], b=new_lower, autojunk=False)
        mapped = _map_span(matcher.get_opcodes(), *span)
        if mapped is None:
            continue
        candidate = " ".join(old[mapped[0] : mapped[1]])
        lowered = candidate.lower()
        if lowered and lowered not in row.answer.lower() and lowered not in row.question.lower():
            return candidate
    return None


def _find(words: list[str], target: list[str]) -> tuple[int, int] | None:
    """Where `target` first sits in `words` as a contiguous run."""
    n = len(target)
    for start in range(len(words) - n + 1):
        if n and words[start : start + n] == target:
            return start, start + n
    return None


def _map_span(
    opcodes: Sequence[tuple[str, int, int, int, int]], t1: int, t2: int
) -> tuple[int, int] | None:
    """The range of the old sentence that [t1, t2) of the new one replaced, or None when an
    edit straddles the span's edge or nothing inside it changed."""
    starts: list[int] = []
    ends: list[int] = []
    changed = False
    for tag, a1, a2, b1, b2 in opcodes:
        if tag == "equal":
            lo, hi = max(b1, t1), min(b2, t2)
            if lo < hi:
                starts.append(a1 + lo - b1)
                ends.append(a1 + hi - b1)
            continue
        if b1 == b2:  # words only the old sentence has, at one point of the new
            if t1 < b1 < t2:
                starts.append(a1)
                ends.append(a2)
                changed = True
            continue
        if b2 <= t1 or b1 >= t2:
            continue
        if b1 < t1 or b2 > t2 or a1 == a2:
            return None  # the edit reaches outside the answer, or only adds words
        starts.append(a1)
        ends.append(a2)
        changed = True
    if not changed or not starts:
        return None
    return min(starts), max(ends)


def _question(row: Row, short: bool, corrected_before: bool) -> dict[str, Any]:
    old = None if corrected_before else superseded_answer(row)
    supporting = " ".join(row.facts[i] for i in row.supporting)
    spec: dict[str, Any] = {
        "type": "memory-dependent",
        "criterion": (
            f"Gives the corrected answer: {row.answer}. The user corrected it ({row.correction});"
            f" an answer resting on what was first said ({supporting}) fails."
        ),
    }
    controls: dict[str, list[str]] = {}
    if short:
        spec["answer_matches"] = [[literal(row.answer)]]
        controls = {"pass": [row.answer], "fail": [DONT_KNOW]}
    if old is not None:
        spec["answer_excludes"] = [literal(old)]
        controls.setdefault("pass", [row.answer])
        controls.setdefault("fail", []).append(old)
    if controls:
        spec["controls"] = controls
    return spec


def literal(text: str) -> str:
    """A scenario pattern that matches `text` as plain text (a "/.../" string is a regex)."""
    if len(text) > 1 and text.startswith("/") and text.endswith("/"):
        return f"/{re.escape(text)}/"
    return text
