"""A stub Chat Completions server that behaves like llama-cpp-python's on response formats.

It answers `response_format: {"type": "json_schema"}` with HTTP 500 and a FastAPI validation
body naming `response_format` (what that server does), and every other request with a valid
answer: for a JSON request, an instance of the schema it was sent; for plain chat, a short
text. Every request body is kept for the test to inspect.
"""

from __future__ import annotations

import json
from typing import Any

from memeval.models.synth import synthesize
from tests.memeval.models.fake_openai import FakeOpenAIServer, Reply, completion

REJECTION = {
    "detail": [
        {
            "type": "literal_error",
            "loc": ["body", "response_format", "type"],
            "msg": "Input should be 'text' or 'json_object'",
        }
    ]
}


def like_llama_cpp_server(body: dict[str, Any]) -> Reply:
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return Reply(status=500, body=REJECTION)
    if fmt.get("type") == "json_object":
        return completion(json.dumps(synthesize(fmt.get("schema") or {"type": "object"})))
    return completion("Noted.")


class SchemaServer(FakeOpenAIServer):
    def __init__(self) -> None:
        super().__init__(responder=like_llama_cpp_server)

    def __enter__(self) -> SchemaServer:
        super().__enter__()
        return self
