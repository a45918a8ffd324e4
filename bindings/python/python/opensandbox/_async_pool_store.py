"""``InMemoryAsyncPoolStateStore``: pool state for the asyncio pools of one process."""

from __future__ import annotations

from datetime import datetime, timedelta
from threading import RLock
from typing import List, Optional, Tuple

from opensandbox._pool_core import IdleBook
from opensandbox.pool_types import IdleEntry, PoolDestroyState, StoreCounters, TakeIdleResult


class InMemoryAsyncPoolStateStore:
    """Single-process store for asyncio pools. Every method completes without blocking
    (the thread lock is held only for in-memory bookkeeping), so it is safe from any loop."""

    def __init__(self) -> None:
        self._book = IdleBook()
        self._lock = RLock()

    async def try_take_idle(self, pool_name: str) -> Optional[str]:
        with self._lock:
            return self._book.take(pool_name, timedelta(0)).sandbox_id

    async def try_take_idle_min_ttl(self, pool_name: str, min_remaining_ttl: timedelta) -> TakeIdleResult:
        """Takes the oldest idle id with more than ``min_remaining_ttl`` left; the alive ones
        skipped on the way are returned for the caller to kill."""
        with self._lock:
            return self._book.take(pool_name, max(min_remaining_ttl, timedelta(0)))

    async def put_idle(self, pool_name: str, sandbox_id: str) -> None:
        with self._lock:
            self._book.put(pool_name, sandbox_id)

    async def remove_idle(self, pool_name: str, sandbox_id: str) -> None:
        with self._lock:
            self._book.remove(pool_name, sandbox_id)

    async def try_acquire_primary_lock(self, pool_name: str, owner_id: str, ttl: timedelta) -> bool:
        with self._lock:
            return self._book.acquire_lock(pool_name, owner_id, ttl, renew_only=False)

    async def renew_primary_lock(self, pool_name: str, owner_id: str, ttl: timedelta) -> bool:
        with self._lock:
            return self._book.acquire_lock(pool_name, owner_id, ttl, renew_only=True)

    async def release_primary_lock(self, pool_name: str, owner_id: str) -> None:
        with self._lock:
            self._book.release_lock(pool_name, owner_id)

    async def reap_expired_idle(self, pool_name: str, now: datetime) -> None:
        with self._lock:
            self._book.reap(pool_name, now, timedelta(0))

    async def reap_expired_idle_min_ttl(
        self, pool_name: str, now: datetime, min_remaining_ttl: timedelta
    ) -> Tuple[str, ...]:
        """Also drops entries with less than ``min_remaining_ttl`` left; returns those still alive."""
        with self._lock:
            return self._book.reap(pool_name, now, max(min_remaining_ttl, timedelta(0)))

    async def snapshot_counters(self, pool_name: str) -> StoreCounters:
        with self._lock:
            return StoreCounters(idle_count=len(self._book.entries(pool_name)))

    async def snapshot_idle_entries(self, pool_name: str) -> List[IdleEntry]:
        with self._lock:
            return self._book.entries(pool_name)

    async def get_max_idle(self, pool_name: str) -> Optional[int]:
        with self._lock:
            return self._book.get_max_idle(pool_name)

    async def set_max_idle(self, pool_name: str, max_idle: int) -> None:
        with self._lock:
            self._book.set_max_idle(pool_name, max_idle)

    async def set_idle_entry_ttl(self, pool_name: str, idle_ttl: timedelta) -> None:
        with self._lock:
            self._book.set_idle_ttl(pool_name, idle_ttl)

    async def get_destroy_state(self, pool_name: str) -> PoolDestroyState:
        with self._lock:
            return self._book.destroy_state(pool_name)

    async def begin_destroy(self, pool_name: str, owner_id: str) -> None:
        with self._lock:
            self._book.begin_destroy(pool_name, owner_id)

    async def clear_pool_state(self, pool_name: str) -> None:
        with self._lock:
            self._book.clear(pool_name)

    async def mark_destroyed(self, pool_name: str, owner_id: str, tombstone_ttl: Optional[timedelta]) -> None:
        with self._lock:
            self._book.mark_destroyed(pool_name, owner_id, tombstone_ttl)
