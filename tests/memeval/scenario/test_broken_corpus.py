"""Every file in broken/ fails `memeval scenarios validate` with its own expected one-line error.

The first line of each file says what the error must be: `# error: MESSAGE` (exact) or
`# error-regex: PATTERN` (when the message lists files that may grow, or is worded by the
YAML parser, which differs between libyaml and pure Python).
Combined files include the small scenarios in fixtures/ through MEMEVAL_SCENARIO_PATH.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memeval.cli import app
from memeval.errors import ScenarioError
from memeval.scenario.loader import resolve

HERE = Path(__file__).parent
BROKEN = sorted((HERE / "broken").glob("*.yaml"))
FIXTURES = HERE / "fixtures"


def expected(path: Path) -> re.Pattern[str]:
    head = path.read_text(encoding="utf-8").splitlines()[0]
    if head.startswith("# error-regex: "):
        return re.compile(head.removeprefix("# error-regex: "))
    assert head.startswith("# error: "), f"{path.name}: first line must say the expected error"
    return re.compile(re.escape(head.removeprefix("# error: ")))


@pytest.fixture
def in_broken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(HERE / "broken")
    monkeypatch.setenv("MEMEVAL_SCENARIO_PATH", str(FIXTURES))


def test_corpus_is_large_enough() -> None:
    assert len(BROKEN) >= 20


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.stem)
def test_validate_prints_the_expected_line(path: Path, in_broken: None) -> None:
    result = CliRunner().invoke(app, ["scenarios", "validate", path.name])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert expected(path).fullmatch(lines[0].removeprefix("error: ")), lines[0]
    assert "Traceback" not in result.output


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.stem)
def test_library_raises_the_same_message(path: Path, in_broken: None) -> None:
    with pytest.raises(ScenarioError) as caught:
        resolve(path.name)
    assert expected(path).fullmatch(str(caught.value))
    # the message names the file and line it points at
    assert re.match(r"^[\w.-]+\.yaml:\d+: ", str(caught.value))


def test_one_bad_file_among_good_ones_fails_the_batch(in_broken: None) -> None:
    good = [str(FIXTURES / "alpha.yaml"), str(FIXTURES / "beta.yaml")]
    result = CliRunner().invoke(app, ["scenarios", "validate", *good, "unknown-key.yaml"])
    assert result.exit_code == 2
    assert [line.split()[0] for line in result.stdout.splitlines()] == ["OK", "OK"]
    assert result.stderr.startswith("error: unknown-key.yaml:27: ")
