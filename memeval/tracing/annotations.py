"""Grades as Phoenix span annotations on each turn (question) span, best effort.

Each verdict layer keeps its source: `question.check` (CODE), `question.judge` (LLM),
`question.human` (HUMAN), the same for `write.*`, and the effective `question`/`write`
verdicts. Re-logging updates in place (Phoenix keys an annotation by name and span), so
`memeval grade` can send human grades again after the run did.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from memeval.rundir.record import TurnRecord
from memeval.rundir.results import RunResults, TurnVerdicts
from memeval.rundir.saved import SavedRun
from memeval.tracing.endpoint import auth_headers, check_health, normalize_endpoint

AnnotatorKind = Literal["CODE", "LLM", "HUMAN"]
KIND_OF_SOURCE: dict[str, AnnotatorKind] = {"check": "CODE", "judge": "LLM", "human": "HUMAN"}
BATCH = 100
ANNOTATIONS_PATH = "/v1/span_annotations"


@dataclass(frozen=True)
class Annotation:
    """One grade on one span, in Phoenix's terms."""

    span_id: str
    name: str
    annotator_kind: AnnotatorKind
    label: str
    explanation: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def score(self) -> float | None:
        return {"pass": 1.0, "fail": 0.0}.get(self.label)

    def payload(self) -> dict[str, Any]:
        result: dict[str, Any] = {"label": self.label}
        if self.score is not None:
            result["score"] = self.score
        if self.explanation.strip():
            result["explanation"] = self.explanation.strip()
        data: dict[str, Any] = {
            "span_id": self.span_id,
            "name": self.name,
            "annotator_kind": self.annotator_kind,
            "result": result,
        }
        if self.metadata:
            data["metadata"] = self.metadata
        return data


def annotations_from_results(results: RunResults, events: Iterable[TurnRecord]) -> list[Annotation]:
    """Every graded verdict of a run, placed on the span its turn recorded in events.jsonl."""
    spans = {(e.scenario, e.repeat, e.turn): e.span_id for e in events if e.span_id}
    out: list[Annotation] = []
    for tv in results.turns:
        span_id = spans.get((tv.scenario, tv.repeat, tv.turn))
        if span_id:
            out.extend(turn_annotations(span_id, tv, run_id=results.run_id))
    return out


def turn_annotations(span_id: str, tv: TurnVerdicts, *, run_id: str = "") -> list[Annotation]:
    meta = {"run_id": run_id, "scenario": tv.scenario, "repeat": tv.repeat, "turn": tv.turn}
    layers: list[tuple[str, str, Any, str]] = []  # name, source, verdict label, explanation
    for aspect, check, judge, human, effective in (
        ("write", tv.write_check, tv.write_judge, tv.write_human, tv.write),
        ("question", tv.question_check, tv.judge, tv.human, tv.question),
    ):
        if check is not None:
            layers.append((f"{aspect}.check", "check", check.verdict, check.reason))
        if judge is not None:
            layers.append(
                (f"{aspect}.judge", "judge", judge.verdict, judge.reason or judge.error or "")
            )
        if human is not None:
            layers.append((f"{aspect}.human", "human", human.verdict, human.note))
        if effective is not None and effective.verdict != "na":
            layers.append((aspect, effective.source, effective.verdict, effective.reason))
    out = []
    for name, source, label, explanation in layers:
        extra = {"question_type": tv.question_type} if name.startswith("question") else {}
        out.append(
            Annotation(
                span_id=span_id,
                name=name,
                annotator_kind=KIND_OF_SOURCE[source],
                label=str(label),
                explanation=explanation or "",
                metadata={**meta, "source": source, **extra},
            )
        )
    return out


def annotate_run(run: SavedRun, results: RunResults) -> int:
    """Send a graded run's verdicts to the Phoenix it was traced to (run.json `phoenix`);
    0 when it was not traced. For `memeval run` after grading and `memeval grade`."""
    phoenix = run.info.phoenix
    if phoenix is None or not phoenix.url:
        return 0
    annotations = annotations_from_results(results, run.events)
    return log_annotations(phoenix.url, phoenix.project, annotations)


def log_annotations(
    url: str | None, project: str, annotations: Sequence[Annotation], *, timeout_s: float = 5.0
) -> int:
    """Send `annotations` to Phoenix at `url`; returns how many were accepted.

    Best effort: an unreachable Phoenix or a refused request costs one warning line and 0.
    `project` only labels the warning; span ids are unique across Phoenix projects.
    """
    if not url or not annotations:
        return 0
    base = normalize_endpoint(url)
    problem = check_health(base)
    if problem is not None:
        _warn(f"grades were not sent to Phoenix at {base} ({problem})")
        return 0
    # The REST endpoint phoenix.client's spans.log_span_annotations posts to. Importing
    # phoenix.client runs arize-phoenix's package __init__ (the whole server: ~9 s of CPU),
    # far too much for one POST at the end of every traced run.
    sent = 0
    try:
        with httpx.Client(base_url=base, timeout=timeout_s, headers=auth_headers()) as http:
            for start in range(0, len(annotations), BATCH):
                chunk = [a.payload() for a in annotations[start : start + BATCH]]
                http.post(ANNOTATIONS_PATH, json={"data": chunk}).raise_for_status()
                sent += len(chunk)
    except httpx.HTTPError as exc:  # best effort: the run's own results are already saved
        _warn(
            f"{len(annotations) - sent} grades were not sent to Phoenix project {project!r} "
            f"({type(exc).__name__}: {exc})"
        )
    return sent


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)
