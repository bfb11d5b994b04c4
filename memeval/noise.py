"""Exact one-sided tests for "the run passes fewer checks than the baseline".

Each check is a stratum: a 2x2 table of its passes and fails in the baseline's repeats and in
the run's. Under the null hypothesis (the change did nothing) a check keeps one pass
probability on both sides, so, given the check's total passes, how many of them fall in the
run is hypergeometric, whatever that probability is. The test statistic is the run's passes
summed over the checks; its exact null distribution is the convolution of the strata's
hypergeometric distributions (the exact stratified test behind Mantel-Haenszel; with one
stratum it is Fisher's exact test). One-sided: only getting worse fails a build.

Per-check strata are what let the baseline's own spread speak: a check that passed 2 of 5
baseline repeats explains a failure in the run well, one that passed 5 of 5 does not, and
a check that passed or failed everywhere on both sides carries no information.

That test treats the checks of one repeat as independent. In a memory suite they are not:
once a repeat's memory departs from another's, later checks fail or pass together. The
repeat-level test is exact whatever the checks' dependence: under the null hypothesis all
repeats, the baseline's and the run's, are exchangeable draws, so the chance that the run's
repeats score this low is the share of the C(base + run, run) ways to pick `run` repeats out
of all of them that score as low or lower. Its smallest possible p is 1 / C(base + run, run).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Stratum:
    """One check (or a pooled metric): passes out of graded outcomes on each side."""

    base_pass: int
    base_n: int
    cur_pass: int
    cur_n: int


def hypergeometric(total: int, good: int, draws: int) -> tuple[int, list[float]]:
    """(lowest k, [P(k), P(k+1), ...]): k good items among `draws` taken from `total`."""
    low, high = max(0, draws - (total - good)), min(draws, good)
    denominator = math.comb(total, draws)
    pmf = [
        math.comb(good, k) * math.comb(total - good, draws - k) / denominator
        for k in range(low, high + 1)
    ]
    return low, pmf


def lower_tail(strata: Iterable[Stratum]) -> float:
    """P(the run's summed passes <= the observed sum | every stratum's margins)."""
    offset, dist = 0, [1.0]
    observed = 0
    for s in strata:
        if s.base_n <= 0 or s.cur_n <= 0:
            continue
        low, pmf = hypergeometric(s.base_n + s.cur_n, s.base_pass + s.cur_pass, s.cur_n)
        merged = [0.0] * (len(dist) + len(pmf) - 1)
        for i, a in enumerate(dist):
            if a:
                for j, b in enumerate(pmf):
                    merged[i + j] += a * b
        offset, dist = offset + low, merged
        observed += s.cur_pass
    return min(1.0, sum(dist[: observed - offset + 1]))


def fisher_one_sided(base_pass: int, base_total: int, cur_pass: int, cur_total: int) -> float:
    """P(the current run passes `cur_pass` or fewer | both runs share one pass rate)."""
    return lower_tail([Stratum(base_pass, base_total, cur_pass, cur_total)])


def repeat_lower_tail(base_scores: list[int], run_scores: list[int]) -> float:
    """P(run-many repeats picked at random from all of them score <= the run's summed score).

    Counted exactly by dynamic programming over (repeats picked, score) rather than by listing
    every subset."""
    scores = [*base_scores, *run_scores]
    picks, observed = len(run_scores), sum(run_scores)
    if not base_scores or not run_scores:
        return 1.0
    # ways[k][s]: subsets of the repeats seen so far with k members scoring s
    ways: list[dict[int, int]] = [dict() for _ in range(picks + 1)]
    ways[0][0] = 1
    for score in scores:
        for k in range(picks, 0, -1):
            for total, count in ways[k - 1].items():
                ways[k][total + score] = ways[k].get(total + score, 0) + count
    low = sum(count for total, count in ways[picks].items() if total <= observed)
    return min(1.0, low / math.comb(len(scores), picks))


def repeat_floor(base_repeats: int, run_repeats: int) -> float:
    """The smallest p the repeat-level test can give."""
    return 1 / math.comb(base_repeats + run_repeats, run_repeats)


def min_detectable(base_repeats: int, run_repeats: int, alpha: float) -> int | None:
    """How many always-passing checks must fail in every repeat of the run for the test to
    reach p < alpha (each such check alone gives p = 1 / C(base + run, run)); None when the
    count would exceed 1,000."""
    per_check = 1 / math.comb(base_repeats + run_repeats, run_repeats)
    for k in range(1, 1001):
        if per_check**k < alpha:
            return k
    return None
