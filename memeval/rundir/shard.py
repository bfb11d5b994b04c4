"""Sharding a run: `--shard I/N` plays the I-th of N disjoint slices of the run's planned
units, so a suite can be spread over N CI machines and joined again with `memeval merge`.

A slice is taken from the planned unit list whatever fields a unit has: unit k (0-based, in
plan order) goes to shard k mod N + 1. The slices are disjoint, together they are the whole
plan, the same plan always slices the same way, and round-robin spreads the repeats of one
scenario over the shards instead of giving one machine all of them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from memeval.errors import ConfigError

T = TypeVar("T")
_SHARD_RE = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """`I/N` with 1 <= I <= N; anything else is a one-line ConfigError."""
    found = _SHARD_RE.match(text)
    if found is not None:
        index, count = int(found.group(1)), int(found.group(2))
        if 1 <= index <= count:
            return Shard(index, count)
    raise ConfigError(f"--shard {text!r} must be I/N with 1 <= I <= N (e.g. --shard 2/4)")


def shard_units(units: Sequence[T], shard: Shard) -> list[T]:
    """The units of one shard, in plan order."""
    return [unit for k, unit in enumerate(units) if k % shard.count == shard.index - 1]
