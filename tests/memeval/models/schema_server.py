"""A stub Chat Completions server that behaves like llama-cpp-python's on response formats.

It answers `response_format: {"type": "json_schema"}` with HTTP 500 and a FastAPI validation
body naming `response_format` (what that server does), and every other request with a valid
answer: for a JSON request, the smallest instance of the schema it was sent; for plain chat,
a short text. Every request body is kept for the test to inspect.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REJECTION = {
    "detail": [
        {
            "type": "literal_error",
            "loc": ["body", "response_format", "type"],
            "msg": "Input should be 'text' or 'json_object'",
        }
    ]
}


def smallest(schema: Any, defs: dict[str, Any] | None = None) -> Any:
    """The smallest value valid against a (simple) JSON schema."""
    if not isinstance(schema, dict):
        return None
    defs = {**(defs or {}), **schema.get("$defs", {}), **schema.get("definitions", {})}
    if "$ref" in schema:
        return smallest(defs.get(schema["$ref"].rsplit("/", 1)[-1], {}), defs)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return smallest(schema[key][0], defs)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {name: smallest(props[name], defs) for name in schema.get("required", props)}
    if kind == "array":
        item = smallest(schema.get("items", {}), defs)
        return [item] * int(schema.get("minItems", 0))
    if kind == "string":
        return "x" * int(schema.get("minLength", 0))
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return None


class SchemaServer:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(body)
                status, reply = server.answer(body)
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,))
        self._thread.daemon = True

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            return 500, REJECTION
        if fmt.get("type") == "json_object":
            content = json.dumps(smallest(fmt.get("schema") or {"type": "object"}))
        else:
            content = "Noted."
        message = {"role": "assistant", "content": content}
        return 200, {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "stub"),
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
        }

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> SchemaServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
