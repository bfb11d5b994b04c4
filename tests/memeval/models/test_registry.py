"""Spec resolution: flags beat env, env beats defaults, an endpoint means openai, else local."""

from __future__ import annotations

import os

import pytest

from memeval.errors import ConfigError
from memeval.models.base import ROLES
from memeval.models.fake import FakeModel
from memeval.models.openai import OpenAIModel
from memeval.models.registry import build_model, describe
from memeval.models.spec import LOCAL_DEFAULTS, local_threads, parse_spec, resolve_specs


def _strs(specs: dict) -> dict[str, str]:
    return {role: str(spec) for role, spec in specs.items()}


def test_nothing_configured_means_local_defaults_per_role() -> None:
    specs = _strs(resolve_specs(None, {}, env={}))
    assert set(specs) == set(ROLES)
    assert specs == {role: f"local:{LOCAL_DEFAULTS[role]}" for role in ROLES}


@pytest.mark.parametrize("var", ["OPENAI_API_KEY", "OPENAI_BASE_URL"])
def test_an_endpoint_means_openai(var: str) -> None:
    specs = _strs(resolve_specs(None, {}, env={var: "x"}))
    assert set(specs.values()) == {"openai:gpt-4o-mini"}


def test_precedence_role_flag_model_flag_role_env_env() -> None:
    env = {
        "MEMEVAL_MODEL": "openai:env-all",
        "MEMEVAL_MODEL_JUDGE": "openai:env-judge",
        "OPENAI_API_KEY": "sk",
    }
    assert str(resolve_specs(None, {}, env)["judge"]) == "openai:env-judge"
    assert str(resolve_specs(None, {}, env)["agent"]) == "openai:env-all"
    flags = {"safety": parse_spec("local:0.5b"), "agent": None}
    flagged = _strs(resolve_specs(parse_spec("fake"), flags, env))
    assert flagged["safety"] == "local:qwen2.5-coder-0.5b"  # --model-ROLE wins
    assert flagged["judge"] == "fake"  # --model beats MEMEVAL_MODEL_JUDGE
    assert flagged["agent"] == "fake"  # an unset role flag falls through


def test_bare_local_picks_each_roles_default() -> None:
    specs = resolve_specs(parse_spec("local"), {}, env={"OPENAI_API_KEY": "sk"})
    assert str(specs["updater"]) == f"local:{LOCAL_DEFAULTS['updater']}"


@pytest.mark.parametrize("spec", ["gpt-4o", "openai:", "local:qwen-7b", "fake:x", "", "llama"])
def test_bad_specs_list_the_valid_forms(spec: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_spec(spec)
    message = str(info.value)
    assert "\n" not in message
    assert "openai:MODEL" in message or "valid:" in message
    assert "local" in message


def test_bad_spec_from_env_and_unknown_role_are_errors() -> None:
    with pytest.raises(ConfigError, match="openai:MODEL"):
        resolve_specs(None, {}, env={"MEMEVAL_MODEL_SAFETY": "gpt4"})
    with pytest.raises(ConfigError, match=r"unknown model role.*roles: agent"):
        resolve_specs(None, {"critic": parse_spec("fake")}, env={})


def test_aliases_are_canonical() -> None:
    assert str(parse_spec("local:Q15")) == "local:qwen2.5-coder-1.5b"
    assert str(parse_spec(" openai:gpt-4o ")) == "openai:gpt-4o"


def test_build_shares_one_instance_per_spec() -> None:
    assert isinstance(build_model(parse_spec("fake")), FakeModel)
    assert build_model(parse_spec("fake")) is build_model(parse_spec("fake"))


def test_build_openai_without_key_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        build_model(parse_spec("openai:gpt-4o-mini-no-key"))


def test_build_openai_with_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model = build_model(parse_spec("openai:gpt-4.1-mini"), concurrency=3)
    assert isinstance(model, OpenAIModel) and model.concurrency == 3


def test_describe_never_leaks_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    info = describe(parse_spec("openai:gpt-4o-mini"))
    assert info["backend"] == "openai" and info["base_url"] == "https://api.openai.com/v1"
    assert info["price_usd_per_1m"] == {"input": 0.15, "output": 0.60}
    assert "sk-secret-value" not in repr(info)
    assert describe(parse_spec("openai:unknown"))["price_usd_per_1m"] is None


def test_describe_fake_and_local() -> None:
    fake = describe(parse_spec("fake"))
    assert fake["fake"] is True and "not a model" in fake["label"]
    local = describe(parse_spec("local:0.5b"))
    assert local["backend"] == "local" and local["model"] == "qwen2.5-coder-0.5b"
    assert local["weights_sha256"].startswith("1d9614638d18")
    assert local["n_ctx"] == 8192 and local["threads"] == local_threads()  # what the engine uses


def test_local_threads_default_to_the_cpus_this_process_may_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MEMEVAL_LOCAL_THREADS", raising=False)
    assert local_threads() == len(os.sched_getaffinity(0))
    monkeypatch.setenv("MEMEVAL_LOCAL_THREADS", "1")
    assert local_threads() == 1
    assert describe(parse_spec("local:qwen2.5-coder-0.5b"))["threads"] == 1


@pytest.mark.parametrize("raw", ["0", "two", "-1", "1.5"])
def test_a_bad_thread_count_is_a_config_error_before_anything_loads(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv("MEMEVAL_LOCAL_THREADS", raw)
    with pytest.raises(ConfigError, match=r"MEMEVAL_LOCAL_THREADS=.* integer >= 1"):
        build_model(parse_spec("local:qwen2.5-coder-0.5b"))
