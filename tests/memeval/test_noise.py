"""The exact tests behind the gate, checked against brute-force enumeration."""

from __future__ import annotations

import itertools
import math

import pytest

from memeval.noise import (
    Stratum,
    fisher_one_sided,
    lower_tail,
    min_detectable,
    repeat_floor,
    repeat_lower_tail,
)


def brute_force_stratified(strata: list[Stratum]) -> float:
    """Every way to deal each check's outcomes between the two sides, equally likely."""
    per_stratum = []
    for s in strata:
        outcomes = [1] * (s.base_pass + s.cur_pass) + [0] * (
            s.base_n + s.cur_n - s.base_pass - s.cur_pass
        )
        sums = [
            sum(outcomes[i] for i in run)
            for run in itertools.combinations(range(len(outcomes)), s.cur_n)
        ]
        per_stratum.append(sums)
    observed = sum(s.cur_pass for s in strata)
    low = total = 0
    for combo in itertools.product(*per_stratum):
        total += 1
        low += sum(combo) <= observed
    return low / total


@pytest.mark.parametrize(
    "strata",
    [
        [Stratum(5, 5, 2, 3)],
        [Stratum(5, 5, 2, 3), Stratum(2, 5, 0, 3), Stratum(5, 5, 3, 3)],
        [Stratum(3, 4, 1, 2), Stratum(1, 4, 2, 2), Stratum(4, 4, 0, 2), Stratum(0, 4, 0, 2)],
        [Stratum(1, 1, 0, 1), Stratum(1, 1, 0, 1)],
    ],
)
def test_the_stratified_test_equals_enumeration(strata: list[Stratum]) -> None:
    assert lower_tail(strata) == pytest.approx(brute_force_stratified(strata))


def test_one_stratum_is_fishers_test() -> None:
    # the tea-tasting table [[3, 1], [1, 3]]: one-sided p = 17/70
    assert fisher_one_sided(3, 4, 1, 4) == pytest.approx(17 / 70)
    assert lower_tail([Stratum(3, 4, 1, 4)]) == pytest.approx(17 / 70)
    assert lower_tail([]) == 1.0


def test_checks_stable_on_both_sides_carry_no_evidence() -> None:
    broken = Stratum(5, 5, 0, 3)
    assert lower_tail([broken]) == pytest.approx(1 / math.comb(8, 3))
    stable = [Stratum(5, 5, 3, 3), Stratum(0, 5, 0, 3)] * 10
    assert lower_tail([broken, *stable]) == pytest.approx(1 / math.comb(8, 3))
    # a flaky check beside it explains part of the drop: the p-value grows
    assert lower_tail([broken, Stratum(3, 5, 1, 3)]) > lower_tail([broken])


@pytest.mark.parametrize(
    ("base", "run"),
    [([5, 5, 5, 5, 5], [4, 4, 4]), ([5, 4, 6, 5, 5], [5, 5, 5]), ([3, 1, 2], [1, 2]), ([2], [2])],
)
def test_the_repeat_test_equals_enumeration(base: list[int], run: list[int]) -> None:
    scores = base + run
    subsets = list(itertools.combinations(scores, len(run)))
    expected = sum(sum(s) <= sum(run) for s in subsets) / len(subsets)
    assert repeat_lower_tail(base, run) == pytest.approx(expected)


def test_the_repeat_tests_floor_is_one_over_the_ways_to_pick_the_run() -> None:
    assert repeat_lower_tail([9] * 5, [8] * 3) == pytest.approx(repeat_floor(5, 3)) == 1 / 56
    assert repeat_floor(1, 1) == 0.5 and repeat_floor(1, 3) == 0.25
    assert repeat_floor(3, 3) == 0.05  # not below 0.05: this setting cannot fail at alpha 0.05


def test_min_detectable_counts_always_failing_checks() -> None:
    assert min_detectable(5, 3, 0.05) == 1  # 1/56
    assert min_detectable(5, 1, 0.05) == 2  # 1/6 each: (1/6)^2 = 0.028
    assert min_detectable(1, 1, 0.05) == 5  # (1/2)^5 = 0.031
