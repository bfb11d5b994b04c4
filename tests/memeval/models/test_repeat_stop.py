"""The agent's repeat stop: a looping free-text answer ends where the loop began."""

from __future__ import annotations

import pytest

from memeval.models.local import REPEAT_WINDOW, _RepeatStop
from memeval.models.local_format import FORMAT_DIGEST

PROMPT = [7, 7, 7]


def feed(stop: _RepeatStop, generated: list[int]) -> int | None:
    """Call the criterion as llama-cpp-python does, once per new token; the number of tokens
    generated when it said stop, or None."""
    for n in range(1, len(generated) + 1):
        if stop(PROMPT + generated[:n], None):
            return n
    return None


def test_a_loop_stops_when_its_first_window_comes_round_again() -> None:
    once = list(range(100, 140))  # 40 distinct tokens, then the same 40 again
    stop = _RepeatStop(len(PROMPT))
    at = feed(stop, once + once + once)
    assert at == 40 + REPEAT_WINDOW and stop.fired
    assert stop.generated[:-REPEAT_WINDOW] == once  # what is kept: one pass of the loop


def test_text_that_never_repeats_a_whole_window_runs_on() -> None:
    # short phrases come back (", the", "of the") but never 24 tokens in a row
    text = [t % 30 + (t // 30) * 1000 for t in range(300)]
    stop = _RepeatStop(len(PROMPT))
    assert feed(stop, text) is None and not stop.fired


def test_the_call_after_generation_ends_gives_the_same_answer() -> None:
    """llama-cpp-python asks the criteria once more after its loop with the same tokens;
    that call must neither stop an answer that ended on its own nor count a window twice."""
    text = list(range(200, 260))
    stop = _RepeatStop(len(PROMPT))
    assert feed(stop, text) is None
    assert stop(PROMPT + text, None) is False  # the same ids again: still not a repeat
    looping = list(range(300, 330)) * 3
    stop = _RepeatStop(len(PROMPT))
    at = feed(stop, looping)
    assert at is not None and stop(PROMPT + looping[:at], None) is True


def test_inactive_never_stops() -> None:
    stop = _RepeatStop(len(PROMPT), active=False)
    assert feed(stop, [5] * 200) is None


@pytest.mark.local_model
async def test_the_embedded_model_is_stopped_where_it_starts_repeating(
    allow_model_requests: None,
) -> None:
    from memeval.models.registry import build_model
    from memeval.models.spec import parse_spec

    model = build_model(parse_spec("local:qwen2.5-coder-0.5b"))
    phrase = "the label tracks satisfaction,"
    prompt = [{"role": "user", "content": f"Repeat after me forever: {phrase} {phrase}"}]
    response = await model.chat(prompt, max_tokens=300)
    text = (response.content or "").lower()
    assert response.completion_tokens < 60  # stopped, not run on to 300 tokens
    assert "label tracks satisfaction" in text and text.count("satisfaction") == 1
    # the same request without the stop loops to the token limit
    raw = await model.engine.run(
        messages=prompt, grammar=None, max_tokens=300, temperature=0.0, stop_repeats=False
    )
    assert raw["choices"][0]["finish_reason"] == "length"
    assert raw["choices"][0]["text"].lower().count("satisfaction") > 10
    # and so the response cache keys it apart, as it keys apart another reply format
    assert model.decoding == f"repeat-stop-24 chunk-64 format-{FORMAT_DIGEST}"
