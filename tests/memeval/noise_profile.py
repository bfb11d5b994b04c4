"""Repeated outcomes of a suite shaped like `combined` under a divergence noise model, as a
graded run directory the gate reads like any other.

The model: each check has a reference outcome (16 of 27 writes, 3 of 20 memory-dependent
and 1 of 10 memory-corruptible questions pass, the committed baseline's rates). A repeat
diverges with probability `diverge`, at a turn drawn uniformly; before it every check keeps
its reference outcome, from it on each check flips with probability `flip`. This is how an
embedded run departs from another when different calls were computed (a partly warm response
cache diverged one run from another half-way through, changing 10 of 21 snapshots and one
of two corruptible verdicts); the defaults are harsher than that case.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from memeval.baseline import CheckHistory
from tests.memeval.rundirs import RunDirBuilder, memory


@dataclass(frozen=True)
class Profile:
    writes: tuple[int, int] = (16, 27)  # (passing, total) reference outcomes
    dependent: tuple[int, int] = (3, 20)
    corruptible: tuple[int, int] = (1, 10)
    diverge: float = 0.5
    flip: float = 0.3


def reference(profile: Profile, seed: int) -> list[tuple[str, str, bool]]:
    """(kind, metric, passes) per check, in turn order: writes and questions interleaved."""
    rng = random.Random(seed)
    groups = []
    for kind, metric, (passing, total) in (
        ("write", "write_match", profile.writes),
        ("question", "memory_dependent", profile.dependent),
        ("question", "memory_corruptible", profile.corruptible),
    ):
        passes = [True] * passing + [False] * (total - passing)
        rng.shuffle(passes)
        groups.append([(kind, metric, p) for p in passes])
    checks = [c for group in groups for c in group]
    rng.shuffle(checks)
    return checks


def outcomes(profile: Profile, repeats: int, seed: int = 0) -> list[CheckHistory]:
    """Check histories of `repeats` repeats drawn from the model."""
    rng = random.Random(seed)
    checks = reference(profile, seed)
    verdicts: list[list[str]] = [[] for _ in checks]
    for _ in range(repeats):
        diverges_at = rng.randrange(len(checks)) if rng.random() < profile.diverge else None
        for i, (_, _, passes) in enumerate(checks):
            if diverges_at is not None and i >= diverges_at and rng.random() < profile.flip:
                passes = not passes
            verdicts[i].append("pass" if passes else "fail")
    return [
        CheckHistory(
            scenario="combined",
            turn=f"t{i:02d}",
            index=i,
            kind=kind,
            metric=metric,
            outcomes=verdicts[i],
        )
        for i, (kind, metric, _) in enumerate(checks)
    ]


def write_run(root: Path, histories: list[CheckHistory], run_id: str = "noisy") -> Path:
    """A run directory whose verdicts, once graded, are exactly `histories`: a write check
    passes when its turn's file holds the turn's fact, a question when the answer names it.
    Files keep every fact written before, so no turn loses one: retention passes on every turn,
    and each eval turn adds a write check that always passes (a turn's write is checked too)."""
    run = RunDirBuilder(root, run_id=run_id)
    facts = {h.turn: {"match": [f"fact {h.turn}"]} for h in histories if h.kind == "write"}
    sc = run.scenario(histories[0].scenario, facts=facts)
    for repeat in range(len(histories[0].outcomes)):
        held: list[str] = []
        for h in histories:
            passes = h.outcomes[repeat] == "pass"
            if h.kind == "write":
                held = [*held, f"- fact {h.turn}"] if passes else held
                sc.turn(
                    h.turn,
                    session=f"s{h.index:02d}",
                    repeat=repeat,
                    file=memory(Goals=held),
                    expect={"records": [h.turn]},
                )
                continue
            sc.turn(
                h.turn,
                session=f"s{h.index:02d}",
                kind="eval",
                repeat=repeat,
                file=memory(Goals=held),
                answer=f"It is fact {h.turn}." if passes else "I do not know.",
                question={
                    "type": h.metric.replace("_", "-"),
                    "criterion": f"Names fact {h.turn}.",
                    "answer_matches": [[f"fact {h.turn}"]],
                },
            )
    return run.write()
