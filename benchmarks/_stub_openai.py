"""A deterministic OpenAI-compatible server on 127.0.0.1 with a fixed latency per request.

It lets a benchmark drive the real `openai:` back end (HTTP, retries, the response cache)
without a model: answers are schema-valid JSON built from the request's json_schema, or a
fixed text, and every request is counted, so "calls the cache saved" is seen from the server.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from _common import ROOT  # noqa: F401  (puts the repository on sys.path)

from memeval.models.synth import synthesize


def answer(request: dict[str, Any]) -> str:
    """The reply content for one chat request: JSON under its schema, else plain text."""
    digest = hashlib.sha256(json.dumps(request["messages"], sort_keys=True).encode()).hexdigest()
    fmt = request.get("response_format") or {}
    schema = (fmt.get("json_schema") or {}).get("schema") or fmt.get("schema")
    if schema is not None:
        return json.dumps(synthesize(schema, text=f"stub-{digest[:8]}"))
    return f"Stub reply {digest[:8]}: not a model answer."


class StubServer:
    """`with StubServer(latency_s=0.2) as server:` then point OPENAI_BASE_URL at server.url."""

    def __init__(self, latency_s: float = 0.2) -> None:
        self.latency_s = latency_s
        self.requests = 0
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                with stub._lock:
                    stub.requests += 1
                time.sleep(stub.latency_s)
                content = answer(request)
                body = json.dumps(
                    {
                        "id": "chatcmpl-stub",
                        "object": "chat.completion",
                        "created": 0,
                        "model": request.get("model", "stub"),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": content},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> StubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
