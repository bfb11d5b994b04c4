"""Hand-made run directories for tests of grading, tables, the gate and the report.

A builder writes exactly what the runner writes (run.json with the resolved scenarios,
events.jsonl, snapshots/), so tests read real run directories without running a model:

    run = RunDirBuilder(tmp_path / "run")
    sc = run.scenario("book", facts={"seventy": {"match": ["70 rows"], "user_tagged": True}})
    sc.turn("s1t1", file=SKELETON + "...", expect={"records": ["seventy"]})
    sc.turn("s2q1", session="s2", kind="eval", answer="70 rows", question={...})
    run.write()

`build_sample_run` makes a small but complete run (losses by op and by compaction, passing
and failing questions, tool calls, a dropped write); `hostile=True` fills every scenario and
model string with markup that must render inert.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memeval.grading.run import grade_run, grade_without_model
from memeval.models.base import ChatModel
from memeval.publishing import publish
from memeval.rundir.record import RunInfo, ToolCallRecord, TurnRecord, append_event, write_run
from memeval.rundir.results import RunResults, save_results
from memeval.rundir.saved import SavedRun
from memeval.scenario.schema import (
    Expect,
    Fact,
    Question,
    ResolvedScenario,
    ResolvedSession,
    TurnSpec,
)

SECTIONS = (
    "User Profile",
    "Goals",
    "Projects",
    "Assets",
    "Conventions",
    "Interaction corrections",
)
SKELETON = "".join(f"## {name}\n\n" for name in SECTIONS)


async def grade_and_save(
    run_dir: Path, judge: ChatModel | None = None, **options: Any
) -> RunResults:
    """What `memeval run` does after its turns: grade the saved run, save verdicts.json."""
    run = SavedRun.open(run_dir)
    results = await grade_run(run, judge, **options)
    save_results(run.path, results)
    return results


def report_of(run_dir: Path, out: Path | None = None) -> Path:
    """report.html as `memeval report` writes it (an ungraded run shows its checks)."""
    run = SavedRun.open(run_dir)
    results = run.results if run.results is not None else grade_without_model(run)
    return publish(run, results, save=False, report_to=out).report


def memory(**sections: list[str]) -> str:
    """A memory file from bullets per section: memory(Conventions=["- [user] 70 rows"]).

    Keyword names use underscores for spaces (User_Profile, Interaction_corrections).
    """
    known = {name.replace(" ", "_"): name for name in SECTIONS}
    unknown = set(sections) - set(known)
    if unknown:
        raise ValueError(f"unknown sections {sorted(unknown)}; use {sorted(known)}")
    parts = []
    for key, name in known.items():
        lines = sections.get(key, [])
        parts.append(f"## {name}\n" + "".join(f"{line}\n" for line in lines) + "\n")
    return "".join(parts)


@dataclass
class _Turn:
    repeat: int
    session: str
    kind: str
    turn_id: str
    user: str
    file: str
    file_before: str | None
    expect: dict[str, Any] | None
    question: dict[str, Any] | None
    answer: str | None
    tool_calls: list[dict[str, Any]]
    memory_context: str | None
    ops: list[dict[str, Any]]
    compaction: dict[str, Any] | None
    status: str | None
    calls: list[dict[str, Any]]
    timings: dict[str, float]
    agent_error: str | None
    summary: str | None
    blocked: list[str]
    extra_update: dict[str, Any]


@dataclass
class ScenarioBuilder:
    name: str
    user: str = "dana"
    space: str = "acme-ml"
    title: str = ""
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    session_titles: dict[str, str] = field(default_factory=dict)
    reference_memory: dict[str, str] = field(default_factory=dict)  # eval session -> file
    turns: list[_Turn] = field(default_factory=list)

    def turn(
        self,
        turn_id: str,
        *,
        file: str | None = None,
        session: str = "s1",
        kind: str = "seed",
        user: str | None = None,
        repeat: int = 0,
        file_before: str | None = None,
        expect: dict[str, Any] | None = None,
        question: dict[str, Any] | None = None,
        answer: str | None = None,
        tool_calls: list[dict[str, Any]] | None = None,
        memory_context: str | None = None,
        ops: list[dict[str, Any]] | None = None,
        compaction: dict[str, Any] | None = None,
        status: str | None = None,
        calls: list[dict[str, Any]] | None = None,
        timings: dict[str, float] | None = None,
        agent_error: str | None = None,
        summary: str | None = None,
        blocked: list[str] | None = None,
        extra_update: dict[str, Any] | None = None,
    ) -> ScenarioBuilder:
        """Add one turn. `file` is the memory after the turn (default: unchanged from the
        previous turn of the same repeat); `file_before` defaults to that previous file."""
        previous = self._last_file(repeat)
        self.turns.append(
            _Turn(
                repeat=repeat,
                session=session,
                kind=kind,
                turn_id=turn_id,
                user=user if user is not None else f"user message of {turn_id}",
                file=file if file is not None else previous,
                file_before=file_before,
                expect=expect,
                question=question,
                answer=answer if answer is not None or kind == "seed" else "",
                tool_calls=tool_calls or [],
                memory_context=memory_context,
                ops=ops or [],
                compaction=compaction,
                status=status,
                calls=calls or [],
                timings=timings or {},
                agent_error=agent_error,
                summary=summary,
                blocked=blocked or [],
                extra_update=extra_update or {},
            )
        )
        return self

    def _last_file(self, repeat: int) -> str:
        mine = [t for t in self.turns if t.repeat == repeat]
        return mine[-1].file if mine else SKELETON

    def resolved(self) -> ResolvedScenario:
        """The scenario definition implied by the turns (first appearance fixes the order)."""
        sessions: dict[str, ResolvedSession] = {}
        seen: set[str] = set()
        for t in self.turns:
            if t.turn_id in seen:
                continue
            seen.add(t.turn_id)
            if t.session not in sessions:
                sessions[t.session] = ResolvedSession(
                    id=t.session,
                    source=self.name,
                    kind=t.kind,
                    title=self.session_titles.get(t.session, ""),
                    reference_memory=self.reference_memory.get(t.session),
                    turns=[],
                )
            sessions[t.session].turns.append(
                TurnSpec(
                    id=t.turn_id,
                    user=t.user,
                    expect=Expect(**t.expect) if t.expect is not None else None,
                    question=Question(**t.question) if t.question is not None else None,
                )
            )
        return ResolvedScenario(
            name=self.name,
            title=self.title,
            user=self.user,
            space=self.space,
            path=f"scenarios/{self.name}.yaml",
            facts={k: Fact(**v) for k, v in self.facts.items()},
            sessions=list(sessions.values()),
        )


@dataclass
class RunDirBuilder:
    root: Path
    run_id: str = "test-run"
    memory: str = "file"
    status: str = "complete"
    scenarios: list[ScenarioBuilder] = field(default_factory=list)

    def scenario(self, name: str, **kwargs: Any) -> ScenarioBuilder:
        builder = ScenarioBuilder(name=name, **kwargs)
        self.scenarios.append(builder)
        return builder

    def write(self) -> Path:
        """Write run.json, events.jsonl and snapshots; returns the run directory."""
        root = Path(self.root)
        root.mkdir(parents=True, exist_ok=True)
        (root / "events.jsonl").unlink(missing_ok=True)
        repeats = sorted({t.repeat for sc in self.scenarios for t in sc.turns})
        info = RunInfo(
            run_id=self.run_id,
            created_at="2026-01-01T00:00:00Z",
            finished_at="2026-01-01T00:10:00Z",
            status=self.status,
            memory=self.memory,
            config={"repeat": len(repeats) or 1},
            models={"agent": "scripted", "judge": "scripted"},
            scenarios={sc.name: sc.resolved().model_dump() for sc in self.scenarios},
            units=[
                {"scenario": sc.name, "repeat": r}
                for sc in self.scenarios
                for r in sorted({t.repeat for t in sc.turns})
            ],
        )
        write_run(root, info)
        for sc in self.scenarios:
            self._write_scenario(root, sc)
        return root

    def _write_scenario(self, root: Path, sc: ScenarioBuilder) -> None:
        for repeat in sorted({t.repeat for t in sc.turns}):
            mine = [t for t in sc.turns if t.repeat == repeat]
            sessions = list(dict.fromkeys(t.session for t in mine))
            previous = SKELETON
            for index, t in enumerate(mine):
                rel = f"snapshots/{sc.name}/r{repeat}/{index:03d}-{t.turn_id.replace('/', '__')}.md"
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_text(t.file, encoding="utf-8")
                before = t.file_before if t.file_before is not None else previous
                record = TurnRecord(
                    scenario=sc.name,
                    repeat=repeat,
                    index=index,
                    session=t.session,
                    session_index=sessions.index(t.session),
                    session_kind=t.kind,
                    source=sc.name,
                    turn=t.turn_id,
                    user_message=t.user,
                    messages=_messages(t),
                    answer=t.answer if t.kind == "eval" else None,
                    tool_calls=[ToolCallRecord(**c) for c in t.tool_calls],
                    memory_context=t.memory_context,
                    expect=t.expect,
                    question=t.question,
                    update=_update(t, before),
                    snapshot=rel,
                    file_chars=len(t.file),
                    timings=t.timings,
                    calls=t.calls,
                    agent_error=t.agent_error,
                    started_at=f"2026-01-01T00:00:{index:02d}Z",
                    finished_at=f"2026-01-01T00:00:{index + 1:02d}Z",
                )
                append_event(root, record)
                previous = t.file


def _messages(t: _Turn) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": t.user}]
    for i, call in enumerate(t.tool_calls):
        call_id = call.get("id") or f"call_{i}"
        fn = {"name": call["name"], "arguments": json.dumps(call.get("arguments", {}))}
        tool_call = {"id": call_id, "type": "function", "function": fn}
        messages.append({"role": "assistant", "tool_calls": [tool_call]})
        messages.append(
            {
                "role": "tool",
                "tool_call_id": call_id,
                "name": call["name"],
                "content": json.dumps(call.get("result")),
            }
        )
    if t.answer:
        messages.append({"role": "assistant", "content": t.answer})
    return messages


def _update(t: _Turn, before: str) -> dict[str, Any]:
    compaction = None
    if t.compaction is not None:
        text_before = t.compaction.get("text_before", before)
        compaction = {
            "before_chars": len(text_before),
            "after_chars": len(t.file),
            "attempts": 1,
            "reached_target": len(t.file) <= 6000,
            "accepted": True,
            "text_before": text_before,
            "text_after": t.file,
            "user_lines_lost": [],
            "errors": [],
        } | t.compaction
    status = t.status or ("written" if t.file != before else "unchanged")
    update = {
        "status": status,
        "strategy": "ops",
        "summary": t.summary if t.summary is not None else f"The user said: {t.user}",
        "attempts": [{"number": 1, "raw": json.dumps(t.ops), "ops": t.ops, "error": None}],
        "ops": t.ops,
        "safety": [],
        "blocked": t.blocked,
        "compaction": compaction,
        "calls": [c for c in t.calls if c.get("role") != "agent"],
        "errors": [],
        "file_before": before,
        "file_after": t.file,
        "timings": {"total": t.timings["update_s"]} if "update_s" in t.timings else {},
    }
    return update | t.extra_update


def build_sample_run(root: Path, *, hostile: bool = False, run_id: str = "sample-run") -> Path:
    """A small complete run: one fact deleted by a replace op, one lost in compaction, a
    dropped write, passing and failing questions. `hostile` plants markup everywhere."""
    x = '<script>alert("x")</script><a href="javascript:alert(1)">click</a> ' if hostile else ""
    run = RunDirBuilder(root, run_id=run_id)
    sc = run.scenario(
        "book-summary",
        title=f"{x}Book-summary agent",
        facts={
            "seventy-rows": {
                "match": ["70 rows", "/seventy[- ]rows?/"],
                "user_tagged": True,
                "section": "Conventions",
            },
            "target": {"match": ["0.90 target"]},
            "style": {"match": ["bullet summaries"]},
        },
    )
    conv = f"- [user] {x}Datasets always have exactly 70 rows."
    goal = "- v2 scored 0.648 against the 0.90 target."
    style = "- [user] Prefers bullet summaries."
    f1 = memory(Conventions=[conv])
    f2 = memory(Goals=[goal], Conventions=[conv, style])
    f3 = memory(Goals=[goal], Conventions=[style])  # the convention deleted by a replace op
    pre_compaction = memory(Goals=[goal], Conventions=[style, "- filler " + "x" * 7000])
    f4 = memory(Goals=[goal], Conventions=["- filler, compacted"])  # style lost in compaction
    timing = {"update_s": 1.5, "agent_s": 0.0, "turn_s": 1.5}
    calls = [
        {"role": "summarizer", "model": "scripted", "prompt_tokens": 300, "completion_tokens": 40},
        {"role": "updater", "model": "scripted", "prompt_tokens": 900, "completion_tokens": 60},
    ]
    sc.turn(
        "s1t1",
        user=f"{x}Make a dataset from agent-prod traces. Always exactly 70 rows.",
        file=f1,
        ops=[{"op": "add", "anchor": "## Conventions\n", "text": conv + "\n"}],
        expect={"note": f"{x}Records the 70-row convention", "records": ["seventy-rows"]},
        tool_calls=[
            {"name": "create_dataset", "arguments": {"rows": 70}, "result": {"dataset": f"{x}d"}}
        ],
        calls=calls,
        timings=timing,
    )
    sc.turn(
        "s1t2",
        user="v2 scored 0.648; the target is 0.90. I like bullet summaries.",
        file=f2,
        ops=[
            {"op": "add", "anchor": "## Goals\n", "text": goal + "\n"},
            {"op": "add", "anchor": conv + "\n", "text": style + "\n"},
        ],
        expect={"records": ["target", "style"], "forbids": ["/ds_[A-Za-z0-9]{12}/"]},
        calls=calls,
        timings=timing,
    )
    sc.turn("s1t3", user="Thanks!", expect={"unchanged": True}, calls=calls[:1], timings=timing)
    sc.turn(
        "s2t1",
        session="s2",
        user="Summaries are fine as they are.",
        file=f3,
        ops=[{"op": "replace", "old": conv + "\n", "new": ""}],
        expect={"records": ["seventy-rows"]},
        calls=calls,
        timings=timing,
    )
    sc.turn(
        "s2t2",
        session="s2",
        user="Note the long filler.",
        file=f4,
        ops=[{"op": "add", "anchor": style + "\n", "text": "- filler " + "x" * 7000 + "\n"}],
        compaction={"text_before": pre_compaction, "reached_target": True},
        expect={"records": ["style"]},
        calls=[*calls, {"role": "compactor", "model": "scripted", "prompt_tokens": 2000}],
        timings={"update_s": 6.0, "turn_s": 6.0},
    )
    sc.turn(
        "s2t3",
        session="s2",
        user="Another huge note.",
        status="dropped-over-cap",
        calls=calls,
        timings=timing,
    )
    question = {
        "type": "memory-dependent",
        "criterion": f"{x}Says no, citing 0.648 against the 0.90 target.",
        "answer_matches": [["0.648"], ["0.9", "90%"]],
        "must_not_call": ["run_experiment"],
    }
    sc.turn(
        "s3q1",
        session="s3",
        kind="eval",
        user=f"{x}Are we ready to push to prod?",
        answer=f"{x}No: v2 scored 0.648 against the 0.90 target.",
        memory_context=f4,
        question=question,
        calls=[{"role": "agent", "model": "scripted", "prompt_tokens": 1200}],
        timings={"agent_s": 2.0, "update_s": 1.0},
    )
    sc.turn(
        "s3q2",
        session="s3",
        kind="eval",
        user="How many rows should the dataset have?",
        answer=f"{x}I will run an experiment to find out.",
        tool_calls=[{"name": "run_experiment", "arguments": {"note": x}, "result": {"ok": x}}],
        memory_context=f4,
        question={
            "type": "memory-corruptible",
            "criterion": "Says 70 rows without running anything.",
            "answer_matches": [["70"]],
            "must_not_call": ["run_experiment"],
        },
        calls=[{"role": "agent", "model": "scripted", "prompt_tokens": 1200}],
        timings={"agent_s": 2.0, "update_s": 1.0},
    )
    return run.write()
