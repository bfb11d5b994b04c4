"""The response cache: identical requests cost no model call; any change of input misses."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memeval.models.accounting import RecordingModel
from memeval.models.base import CallRecord, ChatResponse, ReplyError, ToolCall
from memeval.models.cache import CachedModel, ResponseCache, request_key
from memeval.models.scripted import FunctionModel

MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}}


def counting(name: str = "openai:m1") -> FunctionModel:
    model = FunctionModel(
        lambda m, t, s: ChatResponse(
            content=f"answer {len(m)}", prompt_tokens=9, completion_tokens=2, latency_s=1.5
        ),
        name=name,
    )
    return model


@pytest.fixture
def cache(tmp_path: Path) -> ResponseCache:
    return ResponseCache(tmp_path / "responses.sqlite")


async def test_identical_request_is_served_without_a_model_call(cache: ResponseCache) -> None:
    inner = counting()
    first = await CachedModel(inner, cache).chat(MESSAGES, schema=SCHEMA, max_tokens=20)
    second = await CachedModel(inner, cache).chat(MESSAGES, schema=SCHEMA, max_tokens=20)
    assert inner.calls == 1
    assert first.cached is False and second.cached is True
    assert second.content == first.content == "answer 2"
    assert (second.prompt_tokens, second.completion_tokens) == (9, 2)
    assert second.latency_s < 1.0  # the lookup's time, not the original 1.5 s


@pytest.mark.parametrize(
    "change",
    [
        "prompt",
        "model",
        "schema",
        "tools",
        "max_tokens",
        "temperature",
        "repeat",
        "decoding",
        "tool_choice",
    ],
)
async def test_any_change_misses(cache: ResponseCache, change: str) -> None:
    inner = counting()
    await CachedModel(inner, cache).chat(MESSAGES, schema=SCHEMA)
    messages, schema, tools = MESSAGES, SCHEMA, None
    kwargs: dict[str, object] = {}
    model = CachedModel(inner, cache)
    if change == "prompt":
        messages = [*MESSAGES[:1], {"role": "user", "content": "hi!"}]
    elif change == "model":
        other = counting("openai:m2")
        await CachedModel(other, cache).chat(MESSAGES, schema=SCHEMA)
        assert other.calls == 1
        return
    elif change == "schema":
        schema = {"type": "object", "properties": {"b": {"type": "string"}}}
    elif change == "tools":
        tools = [{"type": "function", "function": {"name": "t"}}]
    elif change == "max_tokens":
        kwargs["max_tokens"] = 7
    elif change == "temperature":
        kwargs["temperature"] = 0.7
    elif change == "repeat":
        model = CachedModel(inner, cache, repeat_index=1)
    elif change == "decoding":  # the same model spec decoding another way (local models)
        inner.decoding = "repeat-stop-24"  # type: ignore[attr-defined]
    elif change == "tool_choice":  # a call required: another question than a free choice
        kwargs["tool_choice"] = "required"
    await model.chat(messages, schema=schema, tools=tools, **kwargs)  # type: ignore[arg-type]
    assert inner.calls == 2


async def test_a_models_decoding_name_is_part_of_the_key(cache: ResponseCache) -> None:
    inner = counting()
    inner.decoding = "repeat-stop-24"  # type: ignore[attr-defined]
    await CachedModel(inner, cache).chat(MESSAGES)
    await CachedModel(inner, cache).chat(MESSAGES)
    assert inner.calls == 1  # same decoding: served from the cache
    inner.decoding = "repeat-stop-32"  # type: ignore[attr-defined]
    again = await CachedModel(inner, cache).chat(MESSAGES)
    assert inner.calls == 2 and not again.cached


def test_an_embedded_models_decoding_name_changes_with_its_reply_format() -> None:
    # how requests are rendered and replies read lives in local_format: a reply cached
    # under another version of that module (an unusable one above all) must not be served
    import hashlib

    from memeval.models import local_format
    from memeval.models.local import DECODING, LocalModel

    digest = hashlib.sha256(Path(local_format.__file__).read_bytes()).hexdigest()[:12]
    assert digest == local_format.FORMAT_DIGEST
    model = LocalModel("qwen2.5-coder-0.5b")  # loads nothing until its first call
    assert model.decoding == f"{DECODING} format-{digest}"


async def test_tool_calls_round_trip(cache: ResponseCache) -> None:
    call = ToolCall("call_1", "query", {"project": "p", "n": [1, 2]})
    inner = FunctionModel(
        lambda m, t, s: ChatResponse(content=None, tool_calls=[call]), name="local:x"
    )
    await CachedModel(inner, cache).chat(MESSAGES)
    hit = await CachedModel(inner, cache).chat(MESSAGES)
    assert hit.cached and hit.content is None and hit.tool_calls == [call]


async def test_failures_are_not_cached(cache: ResponseCache) -> None:
    outcomes: list[object] = [RuntimeError("boom"), "fine"]

    def flaky(m: object, t: object, s: object) -> object:
        return outcomes.pop(0)

    inner = FunctionModel(flaky, name="openai:m")
    with pytest.raises(RuntimeError):
        await CachedModel(inner, cache).chat(MESSAGES)
    assert len(cache) == 0
    assert (await CachedModel(inner, cache).chat(MESSAGES)).content == "fine"


async def test_an_embedded_models_unusable_reply_is_cached_and_raised_again(
    cache: ResponseCache,
) -> None:
    """The same request decodes to the same reply, so a re-run fails the same way without
    asking the model; the failure is marked cached and kept apart from the responses."""
    outcomes: list[object] = [ReplyError("local model: reply is repeating itself: '{'")]

    def stopped(m: object, t: object, s: object) -> object:
        return outcomes.pop(0)

    inner = FunctionModel(stopped, name="local:x")
    with pytest.raises(ReplyError) as first:
        await CachedModel(inner, cache).chat(MESSAGES)
    assert not first.value.cached
    with pytest.raises(ReplyError, match="repeating itself") as again:
        await CachedModel(inner, cache).chat(MESSAGES)  # `outcomes` is empty: no model call
    assert again.value.cached and inner.calls == 1
    assert len(cache) == 0  # no response stored
    with pytest.raises(ReplyError):
        await CachedModel(inner, ResponseCache(cache.path)).chat(MESSAGES)  # persisted


async def test_a_cached_reply_error_is_recorded_as_a_cached_failed_call(
    cache: ResponseCache,
) -> None:
    inner = FunctionModel(lambda m, t, s: ReplyError("cut off"), name="local:x")
    calls: list[CallRecord] = []
    for _ in range(2):
        model = RecordingModel(CachedModel(inner, cache), "agent", calls)
        with pytest.raises(ReplyError):
            await model.chat(MESSAGES)
    assert [(c.cached, c.error) for c in calls] == [
        (False, "ReplyError: cut off"),
        (True, "ReplyError: cut off"),
    ]


async def test_a_free_tool_choice_keeps_the_keys_written_before_it_existed(
    cache: ResponseCache,
) -> None:
    inner = counting()
    await CachedModel(inner, cache).chat(MESSAGES, max_tokens=9)
    key = request_key("openai:m1", MESSAGES, None, None, {"max_tokens": 9, "temperature": 0.0}, 0)
    assert cache.get(key) is not None  # "auto" adds nothing to the key


def test_key_is_canonical() -> None:
    a = request_key("m", MESSAGES, None, {"b": 1, "a": 2}, {"t": 0}, 0)
    b = request_key("m", MESSAGES, None, {"a": 2, "b": 1}, {"t": 0}, 0)
    assert a == b and len(a) == 64


async def test_persists_and_is_shared_with_another_process(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    cache = ResponseCache(path)
    await CachedModel(counting(), cache).chat(MESSAGES)
    script = textwrap.dedent(
        f"""
        import asyncio
        from memeval.models.base import ChatResponse
        from memeval.models.cache import CachedModel, ResponseCache
        from memeval.models.scripted import ScriptedModel

        async def main():
            cache = ResponseCache({str(path)!r})
            hit = await CachedModel(ScriptedModel([], name="openai:m1"), cache).chat(
                {MESSAGES!r})
            assert hit.cached and hit.content == "answer 2", hit
            inner = ScriptedModel(["from child"], name="openai:m1")
            await CachedModel(inner, cache).chat([{{"role": "user", "content": "child"}}])
            cache.close()

        asyncio.run(main())
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    inner = counting()
    hit = await CachedModel(inner, cache).chat([{"role": "user", "content": "child"}])
    assert hit.cached and hit.content == "from child" and inner.calls == 0
    cache.close()


async def test_concurrent_tasks_share_one_cache(cache: ResponseCache) -> None:
    inner = counting()
    prompts = [[{"role": "user", "content": f"q{i}"}] for i in range(40)]
    await asyncio.gather(*(CachedModel(inner, cache).chat(p) for p in prompts))
    again = await asyncio.gather(*(CachedModel(inner, cache).chat(p) for p in prompts))
    assert inner.calls == 40 and all(r.cached for r in again) and len(cache) == 40


def test_two_processes_write_at_once(tmp_path: Path) -> None:
    path = tmp_path / "busy.sqlite"
    ResponseCache(path).close()
    writer = textwrap.dedent(
        f"""
        import sys
        from memeval.models.base import ChatResponse
        from memeval.models.cache import ResponseCache
        cache = ResponseCache({str(path)!r})
        for i in range(300):
            cache.put(f"{{sys.argv[1]}}-{{i}}", "m", ChatResponse(content=str(i)))
        cache.close()
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", writer, tag]) for tag in ("a", "b")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    cache = ResponseCache(path)
    assert len(cache) == 600
    assert (cache.get("b-299") or ChatResponse(content=None)).content == "299"
