"""The question judge's strategies by name, and the default for the model that judges.

Chosen by measurement on the bundled control answers (`benchmarks/judge.py`, README
"Embedded models: strategies").
"""

from __future__ import annotations

from memeval.errors import ConfigError
from memeval.grading.judge import JudgeStrategy, SingleJudge
from memeval.grading.judge_clauses import ClausesJudge

STRATEGIES: dict[str, type[JudgeStrategy]] = {"single": SingleJudge, "clauses": ClausesJudge}
LOCAL_DEFAULT = "single"
ENDPOINT_DEFAULT = "single"


def strategy_for(name: str | None, model_name: str = "") -> JudgeStrategy:
    if name is None:
        name = LOCAL_DEFAULT if model_name.startswith("local:") else ENDPOINT_DEFAULT
    factory = STRATEGIES.get(name)
    if factory is None:
        raise ConfigError(f"judge strategy {name!r} is unknown (valid: {', '.join(STRATEGIES)})")
    return factory()
