"""Where scenarios are found by name.

Search order: directories in MEMEVAL_SCENARIO_PATH (a team's own scenarios), then the repo's
`scenarios/` when memeval runs from a checkout, then the copy installed with the package
(`memeval/_scenarios`, force-included in the wheel). Anything that looks like a path is a path.
"""

from __future__ import annotations

import os
from pathlib import Path

from memeval.errors import ScenarioError

ENV_VAR = "MEMEVAL_SCENARIO_PATH"
SUFFIX = ".yaml"


def package_dir() -> Path:
    """Where the memeval package is (a checkout's, or the installed one)."""
    return Path(__file__).resolve().parents[1]


def search_dirs() -> list[Path]:
    """The directories names are looked up in, first match wins."""
    dirs = [Path(p) for p in os.environ.get(ENV_VAR, "").split(os.pathsep) if p]
    package = package_dir()
    checkout = package.parent / "scenarios"
    if checkout.is_dir() and (package.parent / "pyproject.toml").is_file():
        dirs.append(checkout)
    installed = package / "_scenarios"
    if installed.is_dir():
        dirs.append(installed)
    return dirs


def list_bundled() -> list[Path]:
    """Every scenario file findable by name (the first one per name), sorted by name."""
    found: dict[str, Path] = {}
    for directory in search_dirs():
        for path in sorted(directory.glob(f"*{SUFFIX}")):
            found.setdefault(path.stem, path)
    return [found[name] for name in sorted(found)]


def looks_like_path(text: str) -> bool:
    return text.endswith((".yaml", ".yml")) or "/" in text or os.sep in text


def find(name_or_path: str | Path) -> Path:
    """The file of a scenario given by name (see the search order above) or by path."""
    text = str(name_or_path)
    if isinstance(name_or_path, Path) or looks_like_path(text) or Path(text).is_file():
        path = Path(text)
        if not path.is_file():
            raise ScenarioError(f"{text}: no such scenario file")
        return path
    for directory in search_dirs():
        candidate = directory / f"{text}{SUFFIX}"
        if candidate.is_file():
            return candidate
    names = [p.stem for p in list_bundled()]
    raise ScenarioError(
        f"unknown scenario {text!r} (valid: {', '.join(names) or 'none found'}; or a path to a "
        f"{SUFFIX} file)"
    )


def find_include(name: str, base: Path) -> Path | None:
    """An included scenario: `<name>.yaml` next to the including file, else found by name."""
    sibling = base / f"{name}{SUFFIX}"
    if sibling.is_file():
        return sibling
    for directory in search_dirs():
        candidate = directory / f"{name}{SUFFIX}"
        if candidate.is_file():
            return candidate
    return None


def include_choices(base: Path) -> list[str]:
    """Names an include could use from a file in `base`."""
    names = {p.stem for p in base.glob(f"*{SUFFIX}")} | {p.stem for p in list_bundled()}
    return sorted(names)
