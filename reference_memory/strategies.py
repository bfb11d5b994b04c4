"""Updater, safety and compactor strategies by name, so a host (or memeval's CLI) can pick them
by string."""

from __future__ import annotations

from collections.abc import Callable

from reference_memory.cascade import CascadeUpdater
from reference_memory.compaction import Compactor
from reference_memory.compaction_select import SelectCompactor
from reference_memory.safety import ClassifierSafety, SafetyStrategy
from reference_memory.safety_checklist import ChecklistSafety
from reference_memory.updater import OpsUpdater, UpdaterStrategy

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


def updater_by_name(name: str) -> UpdaterStrategy:
    try:
        return UPDATERS[name]()
    except KeyError:
        raise ValueError(
            f"unknown updater strategy {name!r} (valid: {', '.join(UPDATERS)})"
        ) from None


def safety_by_name(name: str) -> SafetyStrategy:
    try:
        return SAFETY[name]()
    except KeyError:
        raise ValueError(f"unknown safety strategy {name!r} (valid: {', '.join(SAFETY)})") from None


def compactor_by_name(name: str) -> Compactor:
    """The named compactor with the file's thresholds (7,000 trigger, 6,000 target)."""
    try:
        return COMPACTORS[name]()
    except KeyError:
        raise ValueError(
            f"unknown compactor strategy {name!r} (valid: {', '.join(COMPACTORS)})"
        ) from None
