"""Load, validate and resolve scenario files.

Validation runs in phases — YAML, schema, format version, includes, the file's own checks and
combined `order`, then `until` order — and each phase reports the problem nearest the top of
the file as one `ScenarioError`: `FILE:LINE: key: problem (valid: ...)`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from memeval.errors import ScenarioError
from memeval.scenario.checks import check_file
from memeval.scenario.combine import Included, build, check_combined, known_for
from memeval.scenario.locate import find, find_include, include_choices, list_bundled
from memeval.scenario.problems import from_validation, listing, raise_first
from memeval.scenario.schema import SUPPORTED_VERSIONS, ResolvedScenario, Scenario
from memeval.scenario.timeline import check_timeline
from memeval.scenario.yamlsource import YamlDoc, YPath, read_yaml

__all__ = ["find", "list_bundled", "load_file", "resolve"]

NAME = re.compile(r"^[a-z0-9][a-z0-9\-]{0,63}$")


@dataclass(frozen=True)
class Loaded:
    doc: YamlDoc
    scenario: Scenario
    resolved: ResolvedScenario


def load_file(path: str | Path) -> Scenario:
    """One scenario file, fully validated (its includes are read to check references)."""
    return _load(Path(path), ()).scenario


def resolve(name_or_path: str | Path) -> ResolvedScenario:
    """A scenario by name or path, validated and flattened for replay."""
    return _load(find(name_or_path), ()).resolved


def _load(path: Path, stack: tuple[tuple[Path, str], ...]) -> Loaded:
    doc = read_yaml(path)
    try:
        scenario = Scenario.model_validate(doc.data)
    except ValidationError as exc:
        raise_first(doc, from_validation(doc, exc))
        raise  # unreachable: a ValidationError always has at least one error
    if scenario.version not in SUPPORTED_VERSIONS:
        valid = listing(str(v) for v in SUPPORTED_VERSIONS)
        raise doc.error(("version",), f"unsupported format version (valid: {valid})")
    included = _includes(doc, scenario, path, (*stack, (path.resolve(), scenario.name)))
    raise_first(doc, check_file(scenario, known_for(scenario, included)))
    raise_first(doc, check_combined(scenario, included))
    resolved = build(scenario, included, doc.file)
    own_turns: dict[str, YPath] = {
        turn.id: ("sessions", si, "turns", ti)
        for si, session in enumerate(scenario.sessions)
        for ti, turn in enumerate(session.turns)
    }
    raise_first(doc, check_timeline(resolved, set(scenario.facts), own_turns))
    return Loaded(doc, scenario, resolved)


def _includes(
    doc: YamlDoc, scenario: Scenario, path: Path, stack: tuple[tuple[Path, str], ...]
) -> list[Included]:
    """Resolve each included scenario (recursively), refusing cycles and odd names."""
    included: list[Included] = []
    seen: set[str] = set()
    for i, name in enumerate(scenario.include):
        where: YPath = ("include", i)
        if not NAME.match(name):
            raise doc.error(where, f"{name!r} is not a scenario name (lowercase, digits, '-')")
        if name in seen:
            raise doc.error(where, f"{name!r} is included twice")
        seen.add(name)
        target = find_include(name, path.parent)
        if target is None:
            valid = listing(n for n in include_choices(path.parent) if n != scenario.name)
            raise doc.error(where, f"unknown scenario {name!r} (valid: {valid})")
        chain = [n for p, n in stack if p == target.resolve()]
        if chain:
            names = [n for _, n in stack]
            cycle = " -> ".join([*names[names.index(chain[0]) :], name])
            raise doc.error(where, f"include cycle {cycle}")
        loaded = _load(target, stack)
        if loaded.scenario.name != name:
            found = f"{name}.yaml is named {loaded.scenario.name!r}"
            raise doc.error(where, f"{found} (a scenario's name must match its file name)")
        included.append(Included(name, loaded.resolved))
    return included


def check_paths(paths: list[str | Path]) -> list[tuple[str, ResolvedScenario | ScenarioError]]:
    """Validate several files; each gets its scenario or its first error."""
    out: list[tuple[str, ResolvedScenario | ScenarioError]] = []
    for item in paths:
        try:
            out.append((str(item), resolve(item)))
        except ScenarioError as exc:
            out.append((str(item), exc))
    return out
