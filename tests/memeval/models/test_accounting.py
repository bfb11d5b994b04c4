"""Accounting records every call (failed ones too); costs come only from the price table."""

from __future__ import annotations

import pytest

from memeval.models.accounting import RecordingModel, estimate_cost, price_for, total_cost
from memeval.models.adapter import as_memory_model
from memeval.models.base import CallRecord, ChatResponse, ModelError
from memeval.models.scripted import ScriptedModel
from reference_memory.model import Completion, MemoryModel

USER = [{"role": "user", "content": "hi"}]


async def test_successful_calls_are_recorded_with_cost() -> None:
    sink: list[CallRecord] = []
    inner = ScriptedModel(
        [
            ChatResponse(
                content="a", prompt_tokens=1_000_000, completion_tokens=500_000, latency_s=0.25
            )
        ],
        name="openai:gpt-4o-mini",
    )
    await RecordingModel(inner, "summarizer", sink).chat(USER)
    (record,) = sink
    assert (record.role, record.model) == ("summarizer", "openai:gpt-4o-mini")
    assert (record.prompt_tokens, record.completion_tokens) == (1_000_000, 500_000)
    assert record.latency_s == 0.25 and not record.cached and record.error is None
    assert record.cost_usd == pytest.approx(0.15 + 0.30)


async def test_failed_calls_are_recorded_then_reraised() -> None:
    sink: list[CallRecord] = []
    model = RecordingModel(ScriptedModel([ModelError("HTTP 500")], name="openai:x"), "safety", sink)
    with pytest.raises(ModelError):
        await model.chat(USER)
    assert sink[0].error == "ModelError: HTTP 500" and sink[0].role == "safety"


async def test_cached_calls_cost_nothing_and_say_so() -> None:
    sink: list[CallRecord] = []
    hit = ChatResponse(content="a", prompt_tokens=100, completion_tokens=10, cached=True)
    await RecordingModel(ScriptedModel([hit], name="openai:gpt-4o"), "judge", sink).chat(USER)
    assert sink[0].cached is True and sink[0].cost_usd == 0.0


def test_unknown_prices_are_none_never_guessed() -> None:
    assert price_for("openai:gpt-4o-mini") == (0.15, 0.60)
    assert price_for("openai:my-finetune") is None
    assert price_for("local:qwen2.5-coder-1.5b") is None
    assert estimate_cost("openai:some-new-model", 10, 10) is None
    assert estimate_cost("fake", 10, 10) is None
    known = CallRecord("a", "openai:gpt-4o", cost_usd=0.5)
    assert total_cost([known, CallRecord("b", "openai:gpt-4o", cost_usd=0.25)]) == 0.75
    assert total_cost([known, CallRecord("b", "local:q")]) is None


async def test_adapter_satisfies_the_pipeline_protocol() -> None:
    inner = ScriptedModel(
        [
            ChatResponse(
                content='{"ok": true}',
                prompt_tokens=5,
                completion_tokens=2,
                latency_s=0.1,
                cached=True,
            )
        ],
        name="local:qwen2.5-coder-0.5b",
    )
    memory_model = as_memory_model(inner)
    assert isinstance(memory_model, MemoryModel)
    completion = await memory_model.complete(USER, schema={"type": "object"}, max_tokens=9)
    assert completion == Completion(
        text='{"ok": true}',
        prompt_tokens=5,
        completion_tokens=2,
        model="local:qwen2.5-coder-0.5b",
        latency_s=0.1,
        cached=True,
    )
    assert inner.requests[0].schema == {"type": "object"} and inner.requests[0].max_tokens == 9
