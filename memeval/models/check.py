"""`memeval models check`: what a model endpoint can do and what memeval will use with it.

For an `openai:` spec, one short request per feature: a plain chat (latency, usage), each
response-format mode memeval knows (strongest first), native tool calling. For the embedded
model the same questions go through llama.cpp (its JSON and tools are grammar-constrained,
so they always hold). Nothing here changes how a run behaves: a run probes for itself.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from memeval.errors import ConfigError
from memeval.models.base import ChatModel, ModelError
from memeval.models.spec import ModelSpec

CHAT_PROMPT = [{"role": "user", "content": "Reply with the single word: ok"}]


@dataclass
class Feature:
    name: str  # "chat", "json: json_schema", "tools", "usage"
    works: bool
    detail: str


@dataclass
class CheckReport:
    spec: str
    features: list[Feature] = field(default_factory=list)
    uses: dict[str, str] = field(default_factory=dict)  # what memeval will use

    def add(self, name: str, works: bool, detail: str) -> None:
        self.features.append(Feature(name, works, detail))


class Unreachable(ConfigError):
    """The endpoint could not be reached or refused the key: one line, exit 2."""


async def check_model(spec: ModelSpec) -> CheckReport:
    """Probe one model spec; Unreachable / ConfigError when it cannot be asked at all."""
    from memeval.models.registry import build_model

    if spec.backend == "fake":
        report = CheckReport(str(spec))
        report.add("chat", True, "fake is not a model: canned answers for smoke runs")
        return report
    model = build_model(spec)
    if spec.backend == "openai":
        return await _check_openai(model, str(spec))
    return await _check_local(model, str(spec))


async def _check_openai(model: Any, spec: str) -> CheckReport:
    import openai

    from memeval.models import openai as oa

    report = CheckReport(spec)
    base = {"model": model.model, "messages": CHAT_PROMPT, "max_tokens": 8, "temperature": 0.0}
    started = time.perf_counter()
    try:
        raw = await model.send(base)
    except (openai.APIConnectionError, openai.APITimeoutError) as exc:
        where = model.base_url or "https://api.openai.com/v1"
        raise Unreachable(f"{spec}: cannot reach {where} ({type(exc).__name__})") from None
    except openai.AuthenticationError:
        raise Unreachable(f"{spec}: the server refused the key (check OPENAI_API_KEY)") from None
    except openai.APIStatusError as exc:
        raise Unreachable(f"{spec}: HTTP {exc.status_code}: {oa.brief(exc)}") from None
    latency = time.perf_counter() - started
    text = (raw.choices[0].message.content or "").strip() if raw.choices else ""
    report.add("chat", True, f"{latency:.2f} s for a short answer: {text[:40]!r}")
    usage = getattr(raw, "usage", None)
    reported = usage is not None and bool(getattr(usage, "prompt_tokens", 0))
    report.add("usage", reported, "reported" if reported else "missing: memeval estimates tokens")

    first_working: str | None = None
    for mode in oa.JSON_MODES:
        try:
            raw = await model.send(model.probe_request(mode))
        except openai.APIStatusError as exc:
            report.add(f"json: {mode}", False, f"rejected: HTTP {exc.status_code}")
            continue
        except (openai.APIConnectionError, openai.APITimeoutError, ModelError) as exc:
            report.add(f"json: {mode}", False, f"failed: {type(exc).__name__}")
            continue
        if not oa.answered_json(raw):
            report.add(f"json: {mode}", False, "accepted, but the answer was not JSON")
            continue
        report.add(f"json: {mode}", True, "answered with JSON")
        first_working = first_working or mode
    report.uses["json mode"] = first_working or "none works: schema calls will fail"

    native = await model.settle_tools()  # the run's own decision, made the same way
    report.add(
        "tools",
        native,
        "called the tool" if native else "rejected or ignored (answered in text)",
    )
    report.uses["tools"] = "native" if native else "in the prompt (JSON call or answer)"
    report.uses["usage"] = "reported" if reported else "estimated (4 characters a token)"
    return report


async def _check_local(model: ChatModel, spec: str) -> CheckReport:
    from memeval.models import openai as oa

    report = CheckReport(spec)
    started = time.perf_counter()
    response = await model.chat(CHAT_PROMPT, max_tokens=8)
    latency = time.perf_counter() - started
    report.add("chat", True, f"{latency:.2f} s (load included): {(response.content or '')[:40]!r}")
    report.add("usage", response.prompt_tokens > 0, f"{response.prompt_tokens} prompt tokens")
    answer = await model.chat(oa.PROBE_MESSAGES, schema=oa.PROBE_SCHEMA, max_tokens=64)
    try:
        json.loads(answer.content or "")
        report.add("json: grammar", True, "grammar-constrained JSON")
    except ValueError:
        report.add("json: grammar", False, f"not JSON: {(answer.content or '')[:40]!r}")
    tool = await model.chat(oa.TOOL_PROBE_MESSAGES, tools=oa.TOOL_PROBE, max_tokens=64)
    called = bool(tool.tool_calls)
    report.add("tools", called, "grammar-constrained call" if called else "answered in text")
    report.uses.update(
        {"json mode": "grammar", "tools": "grammar (one JSON call or answer)", "usage": "reported"}
    )
    return report
