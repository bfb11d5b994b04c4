"""Whole-chunk prefix reuse in the embedded engine, without a model: what a call may reuse of
the live context and of saved states, and what is kept after it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from llama_cpp import Llama

from memeval.models import local
from memeval.models.local import CHUNK, N_CTX, _Engine
from memeval.models.weights import lookup


@dataclass
class FakeState:
    input_ids: Any
    n_tokens: int


@dataclass
class FakeContext:
    removed_from: list[int] = field(default_factory=list)

    def kv_cache_seq_rm(self, seq: int, start: int, end: int) -> bool:
        self.removed_from.append(start)
        return True


class FakeLlama:
    longest_token_prefix = staticmethod(Llama.longest_token_prefix)

    def __init__(self, held: list[int]) -> None:
        self.input_ids = np.zeros(N_CTX, dtype=np.intc)
        self.input_ids[: len(held)] = held
        self.n_tokens = len(held)
        self._ctx = FakeContext()
        self.loaded: list[FakeState] = []

    def load_state(self, state: FakeState) -> None:
        self.loaded.append(state)
        self.input_ids = state.input_ids.copy()
        self.n_tokens = state.n_tokens


class FakeStates:
    """Like LlamaRAMCache: the saved state sharing the longest prefix with the key."""

    def __init__(self, states: list[FakeState]) -> None:
        self.states = states
        self.saved: list[list[int]] = []

    def __getitem__(self, tokens: list[int]) -> FakeState:
        def shared(s: FakeState) -> int:
            n = 0
            for a, b in zip(s.input_ids[: s.n_tokens], tokens, strict=False):
                if a != b:
                    break
                n += 1
            return n

        best = max(self.states, key=shared, default=None)
        if best is None or shared(best) == 0:
            raise KeyError("no state")
        return best

    def __setitem__(self, key: list[int], value: Any) -> None:
        self.saved.append(key)


def engine(held: list[int], whole: int, states: list[FakeState] = ()) -> _Engine:  # type: ignore[assignment]
    e = _Engine(lookup("qwen2.5-coder-0.5b"))
    e._llama = FakeLlama(held)
    e._states = FakeStates(list(states))
    e._whole = whole
    return e


def state(tokens: list[int]) -> FakeState:
    ids = np.zeros(N_CTX, dtype=np.intc)
    ids[: len(tokens)] = tokens
    return FakeState(ids, len(tokens))


PROMPT = list(range(1, 5 * CHUNK + 11))  # five whole chunks and ten tokens


def test_reuse_stops_at_the_last_whole_chunk_the_prompts_share() -> None:
    held = PROMPT[: 3 * CHUNK + 20] + [0] * 30  # shares 3 chunks and 20 tokens
    e = engine(held, whole=4 * CHUNK)
    assert e._restore_longest_prefix(PROMPT) == 3 * CHUNK
    assert e._llama.n_tokens == 3 * CHUNK  # create_completion reuses exactly this


def test_only_tokens_evaluated_in_whole_chunks_count() -> None:
    # the live context holds the whole prompt, but only its first two chunks were evaluated
    # as whole aligned chunks (the rest in a partial batch or one token at a time)
    e = engine(PROMPT, whole=2 * CHUNK)
    assert e._restore_longest_prefix(PROMPT) == 2 * CHUNK


def test_the_chunk_holding_the_last_prompt_token_is_always_evaluated_again() -> None:
    prompt = PROMPT[: 3 * CHUNK]  # ends exactly at a chunk boundary
    e = engine(PROMPT, whole=5 * CHUNK)
    assert e._restore_longest_prefix(prompt) == 2 * CHUNK
    e = engine(PROMPT, whole=5 * CHUNK)
    assert e._restore_longest_prefix(PROMPT[: 3 * CHUNK + 1]) == 3 * CHUNK


def test_a_saved_state_is_loaded_only_when_it_holds_more_whole_chunks() -> None:
    other = [9999] * (2 * CHUNK)
    saved = state(PROMPT[: 4 * CHUNK])
    e = engine(other, whole=2 * CHUNK, states=[saved])
    assert e._restore_longest_prefix(PROMPT) == 4 * CHUNK
    assert e._llama.loaded == [saved]

    e = engine(PROMPT[: 4 * CHUNK], whole=4 * CHUNK, states=[state(PROMPT[: 4 * CHUNK])])
    assert e._restore_longest_prefix(PROMPT) == 4 * CHUNK
    assert e._llama.loaded == []  # the live context already holds as much


@pytest.mark.parametrize("prompt_len", [CHUNK - 1, 3 * CHUNK, 3 * CHUNK + 5])
def test_after_a_call_only_the_prompts_whole_chunks_are_kept_and_saved(
    prompt_len: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        local, "_slim_state", lambda llama: state(list(llama.input_ids[: llama.n_tokens]))
    )
    generated = [7] * 40
    e = engine(PROMPT[:prompt_len] + generated, whole=0)
    e._keep_whole_chunks(prompt_len)
    whole = prompt_len // CHUNK * CHUNK
    assert e._whole == whole == e._llama.n_tokens
    assert e._llama._ctx.removed_from == [whole]  # the partial chunk and the answer dropped
    assert e._states.saved == ([PROMPT[:whole]] if whole else [])
