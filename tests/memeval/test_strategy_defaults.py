"""Default strategies follow the model serving each role; explicit choices win; bad names fail."""

from __future__ import annotations

import pytest

from memeval.errors import ConfigError
from memeval.models.registry import resolve_specs
from memeval.strategy_defaults import choose_strategies, default_strategies


def test_the_embedded_default_gets_the_small_model_strategies() -> None:
    specs = resolve_specs(None, env={})  # no endpoint configured: every role is local
    assert specs["updater"].startswith("local:")
    assert default_strategies(specs) == {"updater": "cascade", "safety": "checklist"}


@pytest.mark.parametrize("spec", ["openai:gpt-4o-mini", "fake", "scripted-updater"])
def test_endpoint_fake_and_given_models_keep_ops_and_classifier(spec: str) -> None:
    specs = {"updater": spec, "safety": spec}
    assert default_strategies(specs) == {"updater": "ops", "safety": "classifier"}


def test_each_role_is_decided_by_its_own_model() -> None:
    specs = {"updater": "openai:gpt-4o-mini", "safety": "local:qwen2.5-coder-1.5b"}
    assert default_strategies(specs) == {"updater": "ops", "safety": "checklist"}
    specs = {"updater": "local:qwen2.5-coder-0.5b", "safety": "openai:gpt-4o-mini"}
    assert default_strategies(specs) == {"updater": "cascade", "safety": "classifier"}


def test_explicit_choices_win_and_unknown_names_are_one_line_errors() -> None:
    specs = {"updater": "local:qwen2.5-coder-1.5b", "safety": "local:qwen2.5-coder-1.5b"}
    assert choose_strategies(specs, "ops", None) == {"updater": "ops", "safety": "checklist"}
    assert choose_strategies(specs, None, "classifier")["safety"] == "classifier"
    with pytest.raises(ConfigError, match=r"--updater 'nope' is unknown \(valid: .*cascade"):
        choose_strategies(specs, "nope", None)
    with pytest.raises(ConfigError, match=r"--safety 'nope' is unknown \(valid: .*checklist"):
        choose_strategies(specs, None, "nope")
