"""Updater, safety and compactor strategies by name, so a host (or memeval's CLI) can pick them
by string."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from reference_memory.cascade import CascadeUpdater
from reference_memory.compaction import Compactor
from reference_memory.compaction_select import SelectCompactor
from reference_memory.safety import ClassifierSafety, SafetyStrategy
from reference_memory.safety_checklist import ChecklistSafety
from reference_memory.updater import OpsUpdater, UpdaterStrategy

T = TypeVar("T")

UPDATERS: dict[str, Callable[[], UpdaterStrategy]] = {
    "ops": OpsUpdater,
    "ops-constrained": lambda: OpsUpdater(constrain_anchors=True),
    "cascade": CascadeUpdater,
}
SAFETY: dict[str, Callable[[], SafetyStrategy]] = {
    "classifier": ClassifierSafety,
    "checklist": ChecklistSafety,
}
COMPACTORS: dict[str, type[Compactor]] = {
    "rewrite": Compactor,  # the model writes the shorter file
    "select": SelectCompactor,  # the model classifies parts, code removes them
}


def _by_name(kind: str, registry: Mapping[str, Callable[[], T]], name: str) -> T:
    try:
        return registry[name]()
    except KeyError:
        raise ValueError(
            f"unknown {kind} strategy {name!r} (valid: {', '.join(registry)})"
        ) from None


def updater_by_name(name: str) -> UpdaterStrategy:
    return _by_name("updater", UPDATERS, name)


def safety_by_name(name: str) -> SafetyStrategy:
    return _by_name("safety", SAFETY, name)


def compactor_by_name(name: str) -> Compactor:
    """The named compactor with the file's thresholds (7,000 trigger, 6,000 target)."""
    return _by_name("compactor", COMPACTORS, name)
