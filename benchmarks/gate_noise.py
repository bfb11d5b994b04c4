"""The gate's noise behaviour, from stored per-check outcomes (no model runs): for each setting
(baseline repeats, run repeats), how many resampled unchanged commits pass, and how often a
regression is caught.

Outcomes come from a saved baseline or graded run with many repeats (`--stored PATH`: every
check's verdict per repeat), or, by default, from a divergence noise model over a suite the
size of `combined` (tests/memeval/noise_profile.py): `none` (a deterministic back end), `mild`
(30% of repeats diverge at a random turn, each later check then flips with probability 0.2),
`harsh` (50%, 0.3) and `total` (every repeat diverges, 0.5). A regression is played by making
k checks that passed in every drawn run repeat fail in all of them (a fact the change lost).

    .venv/bin/python benchmarks/gate_noise.py [--trials 200] [--stored reports/RUN_OR_FILE]
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

from _common import machine, table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memeval.baseline import CheckHistory, load_baseline
from memeval.gate import GateConfig
from memeval.resample import Change, resample, stored_repeats
from tests.memeval.noise_profile import Profile, outcomes

PROFILES = {
    "none": Profile(diverge=0.0),
    "mild": Profile(diverge=0.3, flip=0.2),
    "harsh": Profile(diverge=0.5, flip=0.3),
    "total": Profile(diverge=1.0, flip=0.5),
}
SETTINGS = [(1, 1), (1, 3), (3, 3), (5, 1), (5, 3), (10, 3)]
BROKEN = (1, 2, 4)


def breaking(k: int, seed: int) -> Change:
    def change(run: list[CheckHistory]) -> list[CheckHistory]:
        passing = [c.key for c in run if c.passed == len(c.outcomes)]
        picked = set(random.Random(seed + len(passing)).sample(passing, min(k, len(passing))))
        return [
            c.model_copy(update={"outcomes": ["fail"] * len(c.outcomes)}) if c.key in picked else c
            for c in run
        ]

    return change


def rows(
    name: str, checks: list[CheckHistory], trials: int, config: GateConfig
) -> list[list[object]]:
    found: list[list[object]] = []
    for base, run in SETTINGS:
        if base + run > stored_repeats(checks):
            continue
        unchanged = resample(checks, base, run, trials=trials, config=config, seed=11)
        caught = [
            resample(
                checks, base, run, trials=trials, config=config, seed=13, change=breaking(k, k)
            )
            for k in BROKEN
        ]
        found.append(
            [
                name,
                f"{base} / {run}",
                f"{unchanged.passed}/{trials}",
                *(f"{c.failed / trials:.0%}" for c in caught),
            ]
        )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--stored", type=Path, help="a baseline JSON or graded run with repeats")
    parser.add_argument("--repeats", type=int, default=20, help="repeats drawn from each model")
    args = parser.parse_args()
    print(machine())
    config = GateConfig(alpha=args.alpha)
    if args.stored is not None:
        _, baseline = load_baseline(args.stored)
        sources = {str(args.stored): baseline.checks}
    else:
        sources = {name: outcomes(p, args.repeats, seed=1) for name, p in PROFILES.items()}
    found = []
    for name, checks in sources.items():
        flaky = sum(c.flaky for c in checks)
        print(f"{name}: {len(checks)} checks, {stored_repeats(checks)} repeats, {flaky} flaky")
        found += rows(name, checks, args.trials, config)
    headers = ["outcomes", "baseline / run repeats", "unchanged commit passes"]
    headers += [f"caught: {k} broken" for k in BROKEN]
    print(f"\nalpha {args.alpha}, {args.trials} resampled trials per cell")
    print(table(headers, found))


if __name__ == "__main__":
    main()
