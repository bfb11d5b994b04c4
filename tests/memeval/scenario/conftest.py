"""Helpers for scenario tests: the fixture scenarios and a scratch directory of YAML files."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def write_yaml(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write `<name>.yaml` into a scratch dir (next to copies of the fixture scenarios)."""
    for path in FIXTURES.glob("*.yaml"):
        shutil.copy(path, tmp_path / path.name)

    def write(name: str, text: str) -> Path:
        path = tmp_path / f"{name}.yaml"
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture
def only_env_dirs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Hide the checkout's and the installed scenarios: names come from MEMEVAL_SCENARIO_PATH."""
    from memeval.scenario import locate

    fake_package = tmp_path / "site" / "memeval"
    fake_package.mkdir(parents=True)
    monkeypatch.setattr(locate, "package_dir", lambda: fake_package)
    monkeypatch.setenv("MEMEVAL_SCENARIO_PATH", str(FIXTURES))
