"""The package stands alone, and its prompts render and teach the rules."""

from __future__ import annotations

import subprocess
import sys

import reference_memory
from reference_memory.templates import PROMPTS_DIR, render, template_hashes


def test_reference_memory_imports_nothing_from_memeval() -> None:
    code = (
        "import sys, reference_memory; print([m for m in sys.modules if m.startswith('memeval')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


PUBLIC = [
    "SKELETON",
    "CAP",
    "TRIGGER",
    "TARGET",
    "EditOp",
    "EditError",
    "apply_ops",
    "CapExceeded",
    "SQLiteStore",
    "PostgresStore",
    "FileMemory",
    "UpdateReport",
    "Turn",
    "MemoryModel",
    "Completion",
]


def test_public_api() -> None:
    assert [name for name in PUBLIC if not hasattr(reference_memory, name)] == []


def test_every_prompt_is_hashed() -> None:
    hashes = template_hashes()
    assert set(hashes) == {p.stem for p in PROMPTS_DIR.glob("*.j2")}
    assert {
        "summarizer_system",
        "updater_system",
        "safety_system",
        "compactor_system",
        "context",
    } <= set(hashes)
    assert all(len(h) == 64 for h in hashes.values())


def test_the_updater_prompt_teaches_the_selection_rule_and_user_tagging() -> None:
    prompt = render("updater_system")
    for phrase in (
        "durable",
        "re-fetched",
        "useful across sessions",
        "0.648",
        '"[user]"',
        "exactly once",
    ):
        assert phrase in prompt, phrase


def test_the_compactor_prompt_states_the_priority_order() -> None:
    prompt = render("compactor_system")
    order = [
        "User Profile",
        "[user]",
        "historical checkpoints",
        "Merge redundant",
        "Tighten",
        "cut",
    ]
    positions = [prompt.index(p) for p in order]
    assert positions == sorted(positions)
