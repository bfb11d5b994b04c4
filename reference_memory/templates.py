"""Prompt templates: Jinja files in `prompts/`, rendered strictly, hashed for run records.

Every prompt puts its static instructions in the system message and the per-call data after
them, so a back end with a prefix cache (llama.cpp) reuses the instruction part across calls.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

PROMPTS_DIR = Path(__file__).parent / "prompts"


@cache
def prompt_environment(directory: Path) -> jinja2.Environment:
    """Strict plain-text Jinja for the prompt files in `directory` (one per directory)."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(directory),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # plain-text prompts for a model, never HTML
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render(name: str, **values: Any) -> str:
    """Render `prompts/<name>.j2`; a missing variable is an error, not an empty string."""
    return prompt_environment(PROMPTS_DIR).get_template(f"{name}.j2").render(**values).strip()


def template_hashes() -> dict[str, str]:
    """sha256 of every prompt file, so a run records exactly which prompts produced it."""
    return {
        path.stem: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(PROMPTS_DIR.glob("*.j2"))
    }
