"""What every store provides, and the rules every store enforces.

Stores are synchronous (plain libraries underneath); `FileMemory` calls them off the event
loop. `lock(user, space)` is held across one update's read-modify-write so two processes never
interleave on one key; plain reads (`get`) never wait for it.
"""

from __future__ import annotations

import hashlib
from contextlib import AbstractContextManager
from typing import Protocol, runtime_checkable

from reference_memory.document import CAP


class StoreError(Exception):
    """A store operation failed."""


class CapExceeded(StoreError, ValueError):
    """A write longer than the cap; the stored file is unchanged."""

    def __init__(self, size: int, cap: int = CAP) -> None:
        super().__init__(f"memory file is {size} characters, over the {cap}-character cap")
        self.size = size
        self.cap = cap


class LockTimeout(StoreError, TimeoutError):
    """The key's lock was not acquired in time (another process holds it)."""


@runtime_checkable
class KeySession(Protocol):
    """Read and write one key while its lock is held (see `Store.lock`)."""

    def get(self) -> str: ...

    def put(self, text: str) -> None: ...


@runtime_checkable
class Store(Protocol):
    def get(self, user: str, space: str) -> str:
        """The current file, or the skeleton when nothing is stored."""
        ...

    def put(self, user: str, space: str, text: str) -> None:
        """Store a new version; raises CapExceeded over the cap."""
        ...

    def versions(self, user: str, space: str) -> list[str]:
        """Every accepted write for the key, oldest first."""
        ...

    def lock(self, user: str, space: str) -> AbstractContextManager[KeySession]:
        """Exclusive per key across threads and processes; blocks until held (else LockTimeout).

        Read and write through the yielded session: a store may tie the write to the lock
        (PostgreSQL commits it in the lock's own transaction). A write is final only once
        the block exits without error.
        """
        ...

    def close(self) -> None: ...


def check_key(user: str, space: str) -> None:
    """Keys are non-empty strings without NUL (which PostgreSQL text cannot hold)."""
    for name, value in (("user", user), ("space", space)):
        if not isinstance(value, str) or not value.strip() or "\x00" in value:
            raise ValueError(f"{name} must be a non-empty string without NUL, got {value!r}")


def check_text(text: str) -> None:
    """A storable file: a string without NUL, at most CAP characters (else CapExceeded)."""
    if not isinstance(text, str):
        raise TypeError(f"memory file must be a string, got {type(text).__name__}")
    if "\x00" in text:
        raise StoreError("memory file contains a NUL character, which cannot be stored")
    if len(text) > CAP:
        raise CapExceeded(len(text))


def key_digest(user: str, space: str) -> bytes:
    """A stable digest of the key (unambiguous: keys cannot contain the NUL separator)."""
    return hashlib.sha256(f"{user}\x00{space}".encode("utf-8", "surrogatepass")).digest()
