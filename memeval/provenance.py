"""Which parts of two fingerprints differ, and what that means for comparing their verdicts.

`differences(baseline, run)` backs `memeval gate` and `memeval compare`; `stale_parts`
backs the check that a committed baseline still matches the code it gates (the parts a
commit decides: prompts, code and scenarios; models, threads and cache use depend on the
machine and the run, and are shown by the gate instead).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from memeval.rundir.fingerprint import (
    CODE_GROUPS,
    CacheUse,
    Fingerprint,
    code_fingerprint,
    scenario_hash,
)

Cause = Literal["change", "environment", "unknown"]

YOUR_CHANGE = "a verdict change may be the change you made"
MEANINGS: dict[str, str] = {
    "prompts": f"prompts changed: {YOUR_CHANGE}",
    "pipeline code": f"pipeline code changed: {YOUR_CHANGE}",
    "agent and runner code": f"agent or runner code changed: {YOUR_CHANGE}",
    "model code": "model back-end code changed: requests and numerics may differ",
    "grading code": "grading code changed: the same answers may get other verdicts",
    "scenario code": "scenario loading changed: checks may be read differently",
}
IDENTITY = ("spec", "backend", "model", "name")  # any of these differing: another model
ENGINE: dict[str, tuple[str, str]] = {  # model_info key -> (part, meaning)
    "weights_sha256": ("weights", "model weights differ: answers come from another model"),
    "base_url": ("endpoint", "endpoints differ: the same model name may be another model"),
    "llama_cpp_python": ("llama.cpp", "llama.cpp versions differ: numerics may differ"),
    "n_ctx": ("context size", "context sizes differ: numerics may differ"),
    "n_batch": ("n_batch", "batch sizes differ: numerics may differ"),
    "n_ubatch": ("n_ubatch", "batch sizes differ: numerics may differ"),
    "threads": ("threads", "threads differ: numerics may differ"),
    "cpu": ("CPU", "CPUs differ: numerics may differ"),
}


@dataclass(frozen=True)
class Difference:
    part: str  # e.g. "prompts", "scenario book-summary", "threads", "cache hits"
    detail: str  # what differs, baseline -> run
    meaning: str
    cause: Cause

    def line(self) -> str:
        return f"{self.part}: {self.detail} — {self.meaning}"


def differences(base: Fingerprint | None, run: Fingerprint | None) -> list[Difference]:
    """Every part of the two fingerprints that differs (both missing or equal: none)."""
    if base is None or run is None:
        if base is None and run is None:
            who = "neither the baseline nor this run has one"
        else:
            who = "the baseline has none" if base is None else "this run has none"
        return [
            Difference(
                "fingerprint",
                f"{who} (made before memeval recorded one)",
                "cannot tell whether prompts, code, models or settings changed; "
                "refresh the baseline from a run of this memeval",
                "unknown",
            )
        ]
    found = code_differences(base, run.code, run.files)
    found += scenario_differences(base.scenarios, run.scenarios, only_common=True)
    found += _model_differences(base.models, run.models)
    for name in sorted(set(base.settings) | set(run.settings)):
        a, b = base.settings.get(name, "–"), run.settings.get(name, "–")
        if a != b:
            found.append(
                Difference(name, f"{a} → {b}", "run settings differ: results may differ", "change")
            )
    cache = _cache_difference(base.cache, run.cache)
    return found + ([cache] if cache is not None else [])


def code_differences(
    base: Fingerprint, code: Mapping[str, str], files: Mapping[str, Mapping[str, str]]
) -> list[Difference]:
    """One difference per code group whose hash differs, naming the files."""
    found: list[Difference] = []
    for group in CODE_GROUPS:
        if base.code.get(group) == code.get(group):
            continue
        before, after = base.files.get(group, {}), files.get(group, {})
        changed = [
            f"{name} ({_what(before.get(name), after.get(name))})"
            for name in sorted(set(before) | set(after))
            if before.get(name) != after.get(name)
        ]
        more = f" and {len(changed) - 6} more" if len(changed) > 6 else ""
        detail = ", ".join(changed[:6]) + more
        found.append(Difference(group, detail or "files differ", MEANINGS[group], "change"))
    return found


def scenario_differences(
    base: Mapping[str, str], run: Mapping[str, str], *, only_common: bool = False
) -> list[Difference]:
    found: list[Difference] = []
    for name in sorted(base):
        if name not in run:
            if not only_common:
                found.append(
                    Difference(f"scenario {name}", "not found", "the scenario is gone", "change")
                )
            continue
        if base[name] != run[name]:
            found.append(
                Difference(
                    f"scenario {name}",
                    "its files changed",
                    "its turns or checks are not the baseline's: compare rates with care",
                    "change",
                )
            )
    return found


def stale_parts(
    base: Fingerprint | None,
    roots: Mapping[str, Path] | None = None,
    scenarios: Mapping[str, list[Path]] | None = None,
) -> list[Difference]:
    """What changed in prompts, code and scenarios since the baseline's run was made.

    `roots` are the package directories to hash (default: this memeval's own); `scenarios`
    maps each baseline scenario to the files it is read from now (None: not checked)."""
    if base is None:
        return differences(None, Fingerprint())
    code, files = code_fingerprint(roots)
    found = code_differences(base, code, files)
    if scenarios is not None:
        now = {name: scenario_hash(paths) for name, paths in scenarios.items()}
        found += scenario_differences(base.scenarios, now)
    return found


def _what(before: str | None, after: str | None) -> str:
    if before is None:
        return "added"
    if after is None:
        return "removed"
    return "changed"


def _model_differences(
    base: Mapping[str, Mapping[str, object]], run: Mapping[str, Mapping[str, object]]
) -> list[Difference]:
    """What differs in each role's model, grouped over roles ("threads: 2 → 4 (agent, judge)")."""
    roles_of: dict[tuple[str, str, str], list[str]] = {}
    for role in sorted(set(base) & set(run)):
        a, b = base[role], run[role]
        other_model = any(a.get(k) != b.get(k) for k in IDENTITY)
        if other_model:
            what = (
                "models",
                f"{_model_name(a)} → {_model_name(b)}",
                "models differ: answers come from another model",
            )
            roles_of.setdefault(what, []).append(role)
        for key, (part, meaning) in ENGINE.items():
            if a.get(key) != b.get(key) and not (other_model and key == "weights_sha256"):
                what = (part, f"{_short(a.get(key))} → {_short(b.get(key))}", meaning)
                roles_of.setdefault(what, []).append(role)
    found = [
        Difference(part, f"{detail} ({', '.join(roles)})", meaning, "environment")
        for (part, detail, meaning), roles in roles_of.items()
    ]
    for role in sorted(set(base) ^ set(run)):
        side = "the baseline" if role in base else "this run"
        found.append(
            Difference(f"role {role}", f"only {side} has it", "the runs use other roles", "change")
        )
    return found


def _model_name(info: Mapping[str, object]) -> str:
    return str(info.get("spec") or info.get("name") or info.get("model") or "–")


def _short(value: object) -> str:
    if value is None:
        return "–"
    text = str(value)
    return text[:12] if len(text) == 64 else text  # a sha256: its first 12 digits


def _cache_difference(base: CacheUse | None, run: CacheUse | None) -> Difference | None:
    if base is None or run is None or (base.hits, base.calls) == (run.hits, run.calls):
        return None
    if base.hits == 0 and run.hits == 0:
        return None  # no answer replayed on either side; call counts are in the metrics
    return Difference(
        "cache hits",
        f"{base.hits} of {base.calls} calls → {run.hits} of {run.calls}",
        "answers served from the response cache were replayed, not computed again: each is "
        "the answer the model gave then; asked again, a hosted model may answer otherwise (the "
        "embedded one answers a request the same way on the same code, threads and CPU)",
        "environment",
    )
