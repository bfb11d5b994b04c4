"""Default strategies follow the model serving each role; explicit choices win; bad names fail."""

from __future__ import annotations

import asyncio

import pytest

from memeval.errors import ConfigError
from memeval.models.spec import ModelSpec, parse_spec, resolve_specs
from memeval.runner import strategy_objects
from memeval.strategy_defaults import (
    LOCAL_OPS_MAX_TOKENS,
    NO_DEADLINE,
    choose_strategies,
    default_strategies,
)
from reference_memory import FileMemory, SQLiteStore
from reference_memory.testing import ALLOW, add, ops, roles, turn


def specs_of(updater: str, safety: str, compactor: str | None = None) -> dict[str, ModelSpec]:
    specs = {"updater": parse_spec(updater), "safety": parse_spec(safety)}
    return specs | ({"compactor": parse_spec(compactor)} if compactor else {})


def test_the_embedded_default_gets_the_small_model_strategies() -> None:
    specs = resolve_specs(None, env={})  # no endpoint configured: every role is local
    assert specs["updater"].local_name is not None
    assert default_strategies(specs) == {
        "updater": "cascade",
        "safety": "checklist",
        "compactor": "select",
    }


@pytest.mark.parametrize("spec", ["openai:gpt-4o-mini", "fake", None])
def test_endpoint_fake_and_given_models_keep_ops_and_classifier(spec: str | None) -> None:
    # a model handed in by a library caller has no spec: its roles are absent
    specs = {"updater": parse_spec(spec), "safety": parse_spec(spec)} if spec else {}
    assert default_strategies(specs) == {
        "updater": "ops",
        "safety": "classifier",
        "compactor": "rewrite",
    }


def test_each_role_is_decided_by_its_own_model() -> None:
    specs = specs_of("openai:gpt-4o-mini", "local:qwen2.5-coder-1.5b", "local:qwen2.5-coder-1.5b")
    assert default_strategies(specs) == {
        "updater": "ops",
        "safety": "checklist",
        "compactor": "select",
    }
    specs = specs_of("local:qwen2.5-coder-0.5b", "openai:gpt-4o-mini", "openai:gpt-4o-mini")
    assert default_strategies(specs) == {
        "updater": "cascade",
        "safety": "classifier",
        "compactor": "rewrite",
    }


def test_explicit_choices_win_and_unknown_names_are_one_line_errors() -> None:
    specs = specs_of("local:qwen2.5-coder-1.5b", "local:qwen2.5-coder-1.5b")
    assert choose_strategies(specs, "ops", None) == {
        "updater": "ops",
        "safety": "checklist",
        "compactor": "rewrite",  # the compactor's model is not among these specs
        "updater_max_tokens": str(LOCAL_OPS_MAX_TOKENS),
        "call_timeout_s": NO_DEADLINE,
    }
    assert choose_strategies(specs, None, None, "select")["compactor"] == "select"
    assert choose_strategies(specs, None, "classifier")["safety"] == "classifier"
    with pytest.raises(ConfigError, match=r"--updater 'nope' is unknown \(valid: .*cascade"):
        choose_strategies(specs, "nope", None)
    with pytest.raises(ConfigError, match=r"--safety 'nope' is unknown \(valid: .*checklist"):
        choose_strategies(specs, None, "nope")
    with pytest.raises(
        ConfigError, match=r"--compactor 'nope' is unknown \(valid: rewrite, select"
    ):
        choose_strategies(specs, None, None, "nope")


def test_only_an_embedded_model_writing_ops_gets_the_output_bound() -> None:
    local = specs_of("local:qwen2.5-coder-0.5b", "local:qwen2.5-coder-0.5b")
    endpoint = specs_of("openai:gpt-4o-mini", "openai:gpt-4o-mini")
    assert "updater_max_tokens" not in choose_strategies(local, None, None)  # cascade
    assert "updater_max_tokens" not in choose_strategies(endpoint, None, None)  # ops, endpoint
    assert "updater_max_tokens" not in choose_strategies(endpoint, "ops", "checklist")
    assert choose_strategies(local, "ops", None)["updater_max_tokens"] == "400"


async def update_once(tmp_path, models, strategies: dict[str, str]):
    """One pipeline update built from the strategies as run.json records them."""
    store = SQLiteStore(tmp_path / "m.sqlite")
    try:
        memory = FileMemory(models, store, **strategy_objects(strategies))
        return await memory.update("dana", "acme", turn())
    finally:
        store.close()


async def test_the_recorded_bound_reaches_the_updater_call_and_no_other(tmp_path) -> None:
    local = specs_of("local:qwen2.5-coder-1.5b", "local:qwen2.5-coder-1.5b")
    strategies = choose_strategies(local, "ops", "classifier")
    models = roles(
        summarizer=["The user said 70 rows."],
        updater=[ops(add("## Conventions", "- [user] Datasets have exactly 70 rows"))],
        safety=[ALLOW],
    )
    report = await update_once(tmp_path, models, strategies)
    assert report.written, report.errors
    assert [r.max_tokens for r in models["updater"].requests] == [LOCAL_OPS_MAX_TOKENS]
    assert models["summarizer"].requests[0].max_tokens == 300  # the pipeline's own default
    assert "exactly 70 rows" in report.file_after


def test_a_pipeline_on_an_embedded_model_has_no_per_call_deadline() -> None:
    local = specs_of("local:qwen2.5-coder-1.5b", "local:qwen2.5-coder-1.5b")
    mixed = specs_of("openai:gpt-4o-mini", "local:qwen2.5-coder-0.5b")
    endpoint = specs_of("openai:gpt-4o-mini", "openai:gpt-4o-mini")
    assert choose_strategies(local, None, None)["call_timeout_s"] == NO_DEADLINE
    assert choose_strategies(mixed, None, None)["call_timeout_s"] == NO_DEADLINE
    assert "call_timeout_s" not in choose_strategies(endpoint, None, None)
    assert strategy_objects(choose_strategies(local, None, None))["call_timeout_s"] is None
    assert "call_timeout_s" not in strategy_objects(choose_strategies(endpoint, None, None))


def slow(answer: str, seconds: float):
    async def answer_late(_request) -> str:
        await asyncio.sleep(seconds)
        return answer

    return answer_late


@pytest.mark.parametrize(("deadline", "written"), [(NO_DEADLINE, True), ("0.05", False)])
async def test_the_recorded_deadline_decides_whether_a_slow_call_is_cancelled(
    tmp_path, deadline: str, written: bool
) -> None:
    strategies = {"updater": "ops", "safety": "classifier", "call_timeout_s": deadline}
    models = roles(
        summarizer=[slow("The user said 70 rows.", 0.3)],
        updater=[ops(add("## Conventions", "- [user] Datasets have exactly 70 rows"))],
        safety=[ALLOW],
    )
    report = await update_once(tmp_path, models, strategies)
    assert report.written is written, report.errors
    if not written:
        assert any("timed out" in e for e in report.errors), report.errors
