"""Which updater and safety strategies a run uses when the user does not say.

Small embedded models and capable endpoint models need different designs: measured on the
held-in cases (benchmarks/strategies.py, README "Embedded models: strategies"), the local
Qwen2.5-Coder models write right memory far more often when they answer tiny constrained
questions (`cascade`) than when they write edit operations (`ops`), and judge safety better
with a yes/no checklist plus rules (`checklist`) than with one allow/block field. Each role is
decided by the model serving it; the choice is recorded in run.json.
"""

from __future__ import annotations

from collections.abc import Mapping

from memeval.errors import ConfigError
from memeval.models.spec import ModelSpec
from reference_memory.strategies import COMPACTORS, SAFETY, UPDATERS

LOCAL_UPDATER: dict[str, str] = {
    "qwen2.5-coder-0.5b": "cascade",
    "qwen2.5-coder-1.5b": "cascade",
}
"""Embedded model -> updater strategy, chosen by measurement; an unlisted local model gets
`cascade` too (any model small enough to embed)."""
LOCAL_SAFETY: dict[str, str] = {
    "qwen2.5-coder-0.5b": "checklist",
    "qwen2.5-coder-1.5b": "checklist",
}
LOCAL_COMPACTOR = "select"
"""Compactor for an embedded model: asked to rewrite a 7,000-character file, the 1.5B copies it
back unchanged (README, "Compaction on the embedded defaults"); it can classify parts."""
DEFAULTS = {"updater": "ops", "safety": "classifier", "compactor": "rewrite"}
"""Endpoint models, `fake` (overhead runs) and models handed in by a library caller."""
LOCAL_OPS_MAX_TOKENS = 400
"""Output bound for an embedded model writing `ops`: a right batch of a few small operations
takes 50-150 tokens, but the embedded models now and then write JSON until the bound, three
attempts in a row; at 1,024 tokens that cost up to ~7 minutes for one turn on a 2-core CPU.
A batch cut off here is a failed attempt like any other (the retry says so)."""
PIPELINE_ROLES = ("summarizer", "updater", "safety", "compactor")
NO_DEADLINE = "none"
"""`call_timeout_s` for a pipeline served by an embedded model. The pipeline's 180 s per-call
deadline is for endpoints that hang; an embedded call cannot hang, only run slowly. After a
cache hit the next embedded call evaluates the whole prompt cold (~5,000 tokens, ~150 s on 2
cores), so under any CPU contention the deadline cancelled updater calls and a run's writes,
and with them its verdicts, depended on what the response cache held."""


def default_strategies(specs: Mapping[str, ModelSpec]) -> dict[str, str]:
    """role specs -> {"updater", "safety", "compactor": name}, each from the model serving that
    role."""
    chosen = dict(DEFAULTS)
    updater_model = _local_name(specs.get("updater"))
    if updater_model is not None:
        chosen["updater"] = LOCAL_UPDATER.get(updater_model, "cascade")
    safety_model = _local_name(specs.get("safety"))
    if safety_model is not None:
        chosen["safety"] = LOCAL_SAFETY.get(safety_model, "checklist")
    if _local_name(specs.get("compactor")) is not None:
        chosen["compactor"] = LOCAL_COMPACTOR
    return chosen


def choose_strategies(
    specs: Mapping[str, ModelSpec],
    updater: str | None,
    safety: str | None,
    compactor: str | None = None,
) -> dict[str, str]:
    chosen = default_strategies(specs)
    for role, value, registry in (
        ("updater", updater, UPDATERS),
        ("safety", safety, SAFETY),
        ("compactor", compactor, COMPACTORS),
    ):
        if value is None:
            continue
        if value not in registry:
            raise ConfigError(f"--{role} {value!r} is unknown (valid: {', '.join(registry)})")
        chosen[role] = value
    if chosen["updater"] == "ops" and _local_name(specs.get("updater")) is not None:
        chosen["updater_max_tokens"] = str(LOCAL_OPS_MAX_TOKENS)
    if any(_local_name(specs.get(role)) is not None for role in PIPELINE_ROLES):
        chosen["call_timeout_s"] = NO_DEADLINE
    return chosen


def _local_name(spec: ModelSpec | None) -> str | None:
    """The embedded model's name for a `local:NAME` spec (resolved specs are canonical)."""
    return spec.local_name if spec is not None else None
