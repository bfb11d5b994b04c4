"""Serializing updates per key: an in-process asyncio lock, then the store's cross-process lock.

The asyncio lock queues same-key updates inside one process without tying up threads; the
store lock (entered off the event loop) keeps other processes out. A cancelled waiter still
releases a store lock its thread acquired after the cancellation.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager, asynccontextmanager
from dataclasses import dataclass, field
from weakref import WeakKeyDictionary

from reference_memory.store.base import KeySession, Store

Key = tuple[str, str]


@dataclass
class _Entry:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0


class KeyLocks:
    """One asyncio.Lock per (user, space) and event loop, dropped when nobody holds or awaits it."""

    def __init__(self) -> None:
        self._by_loop: WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Key, _Entry]]
        self._by_loop = WeakKeyDictionary()

    @asynccontextmanager
    async def hold(self, key: Key) -> AsyncIterator[None]:
        entries = self._by_loop.setdefault(asyncio.get_running_loop(), {})
        entry = entries.setdefault(key, _Entry())
        entry.users += 1
        try:
            async with entry.lock:
                yield
        finally:
            entry.users -= 1
            if entry.users == 0:
                entries.pop(key, None)


@dataclass
class StoreLock:
    """The store's lock for one key, held from async code; exit errors are kept, not raised."""

    store: Store
    key: Key
    release_error: str | None = None

    @asynccontextmanager
    async def hold(self) -> AsyncIterator[KeySession]:
        manager = self.store.lock(*self.key)
        acquiring = asyncio.ensure_future(asyncio.to_thread(manager.__enter__))
        try:
            session = await asyncio.shield(acquiring)
        except asyncio.CancelledError:
            acquiring.add_done_callback(lambda done: _release_late(manager, done))
            raise
        failed: BaseException | None = None
        try:
            yield session
        except BaseException as exc:
            failed = exc
            raise
        finally:
            args = (type(failed), failed, failed.__traceback__) if failed else (None, None, None)
            try:
                await asyncio.to_thread(manager.__exit__, *args)
            except Exception as exc:  # e.g. the commit of the lock's transaction failed
                if failed is None:
                    self.release_error = f"{type(exc).__name__}: {exc}"


def _release_late(
    manager: AbstractContextManager[KeySession], done: asyncio.Future[KeySession]
) -> None:
    if not done.cancelled() and done.exception() is None:
        asyncio.get_running_loop().run_in_executor(None, manager.__exit__, None, None, None)
