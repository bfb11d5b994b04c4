"""Which updater and safety strategies a run uses when the user does not say.

Small embedded models and capable endpoint models need different designs (see
../shared/MEASUREMENTS.md and benchmarks/strategies.py); the choice is recorded in run.json.
"""

from __future__ import annotations

from collections.abc import Mapping

from memeval.errors import ConfigError
from reference_memory.strategies import SAFETY, UPDATERS


def default_strategies(specs: Mapping[str, str]) -> dict[str, str]:
    """role specs -> {"updater": name, "safety": name}."""
    return {"updater": "ops", "safety": "classifier"}


def choose_strategies(
    specs: Mapping[str, str], updater: str | None, safety: str | None
) -> dict[str, str]:
    chosen = default_strategies(specs)
    if updater is not None:
        if updater not in UPDATERS:
            raise ConfigError(f"--updater {updater!r} is unknown (valid: {', '.join(UPDATERS)})")
        chosen["updater"] = updater
    if safety is not None:
        if safety not in SAFETY:
            raise ConfigError(f"--safety {safety!r} is unknown (valid: {', '.join(SAFETY)})")
        chosen["safety"] = safety
    return chosen
