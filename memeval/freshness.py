"""Is a committed baseline still the code's? The rule a CI enforces: prompts, pipeline code or
scenarios do not change without the baseline being refreshed in the same change.

`stale_baseline(path)` compares the baseline's fingerprint with the prompts, code and
scenario files as they are now (memeval.provenance.stale_parts) and returns one problem per
line, each ending with the commands that refresh the baseline; no problems: it is fresh.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path

from memeval.baseline import Baseline, load_baseline
from memeval.provenance import stale_parts
from memeval.scenario.loader import resolve


def refresh_commands(baseline: Baseline | None, path: Path) -> str:
    """The commands that remake `path`: the baseline's own run command (without a response
    cache, so every answer is computed by this code), then --write-baseline."""
    argv = _keep_result_options(baseline.command) if baseline is not None else []
    if not argv or argv[0] != "run":
        argv = ["run", *(sorted({m.scenario for m in baseline.metrics}) if baseline else [])]
        argv = argv if len(argv) > 1 else ["run", "combined"]
    if "--no-cache" not in argv:
        argv.append("--no-cache")
    run = "memeval " + shlex.join(argv)
    return f"`{run}`, then `memeval gate reports/<run-id> --write-baseline {path}`, and commit it"


def stale_baseline(
    path: Path,
    *,
    roots: Mapping[str, Path] | None = None,
    scenario_dir: Path | None = None,
    allow_fake: bool = False,
) -> list[str]:
    """Problems that make the baseline at `path` out of date; [] when it is fresh.

    `roots`: the package directories to hash (default: this memeval's); `scenario_dir`: where
    the baseline's scenarios are read now (default: found by name, as `memeval run` does)."""
    _, baseline = load_baseline(path)
    refresh = f"refresh it: {refresh_commands(baseline, path)}"
    if baseline.fingerprint is None:
        return [
            f"{path} has no fingerprint (made before memeval recorded one), so nothing shows "
            f"which prompts and code it gates; {refresh}"
        ]
    problems = []
    scenarios = {
        name: [Path(f) for f in resolve(_scenario_ref(name, scenario_dir)).files]
        for name in baseline.fingerprint.scenarios
    }
    for d in stale_parts(baseline.fingerprint, roots, scenarios):
        problems.append(f"{path}: {d.part} changed since its run ({d.detail}); {refresh}")
    if not baseline.checks:
        problems.append(f"{path} has no per-check history; {refresh}")
    fake = [role for role, m in baseline.fingerprint.models.items() if m.get("backend") == "fake"]
    if fake and not allow_fake:
        problems.append(
            f"{path} was made with the fake stand-in ({', '.join(fake)}), which is not a "
            f"model; {refresh}"
        )
    return problems


# `memeval run` options that only say where output goes (they do not shape results)
OUTPUT_OPTIONS = ("--out", "--baseline", "--junit", "--phoenix", "--project", "--resume")
DISPLAY_FLAGS = ("--progress", "--no-progress")  # how a run looks, never what it computes


def _keep_result_options(argv: list[str]) -> list[str]:
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in OUTPUT_OPTIONS:
            skip = True
        elif arg in DISPLAY_FLAGS:
            continue
        elif not arg.startswith(tuple(f"{o}=" for o in OUTPUT_OPTIONS)):
            kept.append(arg)
    return kept


def _scenario_ref(name: str, directory: Path | None) -> str | Path:
    return directory / f"{name}.yaml" if directory is not None else name
