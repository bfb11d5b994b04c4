"""The held-in updater and safety cases (benchmarks/cases/*.yaml) and the rule that scores them.

A case is RIGHT when, after one pipeline update of the case's file:
  1. the update did not fail (status written, unchanged or blocked: not failed, rejected after
     retries, or skipped because the gate could not run);
  2. every fact in `expect.records` holds by the scenario rule (a line matches one of its
     patterns; on a `[user]` line when the fact is user-tagged; inside its `## ` section when
     it names one), and every fact in `tool_facts` holds on a line WITHOUT `[user]`, and
     every fact in `subsections` on a line under that `### ` heading ("": under none);
  3. no `expect.forbids` pattern is anywhere in the file;
  4. with `expect.unchanged`, the file is byte-for-byte the file before;
  5. every `superseded` line (the old value of a changed fact: 70 rows, Berlin time) is gone,
     and every other line of the file before is still there (no unrelated line lost), with
     the six sections intact.
A safety case is right when the gate's verdict equals the case's `verdict`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from memeval.grading.matching import USER_LINE, check_fact, find_any, search
from memeval.replay import seed_messages
from memeval.scenario.schema import Fact, TurnSpec
from reference_memory import SKELETON, Turn, UpdateReport, missing_sections

CASES_DIR = Path(__file__).parent / "cases"
FAILED = ("failed", "rejected-after-retries", "skipped-safety-unavailable")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class UpdaterCase(_Strict):
    id: str
    about: str
    file: str = "skeleton"  # a key of `files`, or "skeleton"
    turn: TurnSpec
    facts: dict[str, Fact] = Field(default_factory=dict)
    tool_facts: list[str] = Field(default_factory=list)
    superseded: list[str] = Field(default_factory=list)  # lines of the file the turn replaces
    subsections: dict[str, str] = Field(default_factory=dict)  # fact -> `### ` heading, "": none
    text: str = ""  # the file itself, filled in from `files` on load

    @model_validator(mode="after")
    def _facts_known(self) -> UpdaterCase:
        expect = self.turn.expect
        named = [*(expect.records if expect else []), *self.tool_facts, *self.subsections]
        unknown = sorted(set(named) - set(self.facts))
        if unknown:
            raise ValueError(
                f"case {self.id}: unknown facts {unknown} (defined: {sorted(self.facts)})"
            )
        return self

    def as_turn(self) -> Turn:
        messages, _ = seed_messages(self.turn, 0)
        return Turn(messages=messages)


class SafetyCase(_Strict):
    id: str
    verdict: Literal["allow", "block"]
    text: str
    about: str = ""


class _UpdaterFile(_Strict):
    files: dict[str, str]
    cases: list[UpdaterCase]


class _SafetyFile(_Strict):
    cases: list[SafetyCase]


def load_updater_cases(path: Path = CASES_DIR / "updater.yaml") -> list[UpdaterCase]:
    data = _UpdaterFile.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    files = {"skeleton": SKELETON, **data.files}
    for case in data.cases:
        if case.file not in files:
            raise ValueError(f"case {case.id}: unknown file {case.file!r} (files: {sorted(files)})")
        case.text = files[case.file]
        absent = [line for line in case.superseded if line not in case.text.splitlines()]
        if absent:
            raise ValueError(f"case {case.id}: superseded lines not in its file: {absent}")
        if missing_sections(case.text):
            raise ValueError(f"file {case.file!r} lacks sections {missing_sections(case.text)}")
    ids = [case.id for case in data.cases]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate case ids in updater.yaml")
    return data.cases


def load_safety_cases(path: Path = CASES_DIR / "safety.yaml") -> list[SafetyCase]:
    return _SafetyFile.model_validate(yaml.safe_load(path.read_text(encoding="utf-8"))).cases


def judge_update(case: UpdaterCase, report: UpdateReport) -> list[str]:
    """Why the write is wrong (empty list: right), one reason per broken rule."""
    before, after = case.text, report.file_after
    wrong: list[str] = []
    if report.status in FAILED:
        wrong.append(f"update {report.status}: {'; '.join(report.errors)[:160]}")
    expect = case.turn.expect
    for name in expect.records if expect else []:
        result = check_fact(case.facts[name], after)
        if not result.holds:
            wrong.append(f"missing {name}: {result.why}")
    for name in case.tool_facts:
        lines = [line for line in after.splitlines() if find_any(case.facts[name].match, line)]
        if lines and all(USER_LINE.match(line) for line in lines):
            wrong.append(f"{name} was found by a tool but sits on a [user] line")
    for name, heading in case.subsections.items():
        wanted = f"### {heading}".casefold() if heading else ""
        match = case.facts[name].match
        under = [h for line, h in _headings_of_lines(after) if find_any(match, line)]
        if under and wanted not in [(h or "").casefold() for h in under]:
            where = f"under '### {heading}'" if heading else "outside every subsection"
            wrong.append(f"{name} is not {where} (found under: {under})")
    for pattern in expect.forbids if expect else []:
        found = search(pattern, after)
        if found:
            wrong.append(f"forbidden {pattern!r} present: {found.group(0)!r}")
    if expect and expect.unchanged and after != before:
        wrong.append("should be unchanged but the file changed")
    kept = set(after.splitlines())
    for line in case.superseded:
        if line in kept:
            wrong.append(f"superseded line still there: {line!r}")
    for line in before.splitlines():
        if line.strip() and line not in kept and line not in case.superseded:
            wrong.append(f"unrelated line lost: {line!r}")
    if missing_sections(after):
        wrong.append(f"sections broken: {missing_sections(after)}")
    return wrong


def _headings_of_lines(text: str) -> list[tuple[str, str | None]]:
    """Each line with the `### ` heading it sits under (None: not in a subsection)."""
    out: list[tuple[str, str | None]] = []
    heading: str | None = None
    for line in text.splitlines():
        if line.startswith("## "):
            heading = None
        elif line.startswith("### "):
            heading = line.strip()
        else:
            out.append((line, heading))
    return out
