"""The parts of the pool that do no I/O, shared by the sync and async pools and stores:
reconcile health bookkeeping, the replenish plan, and the in-memory idle book."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Deque, Dict, List, Optional, Tuple

from opensandbox.exceptions import PoolDestroyedException
from opensandbox.pool_types import IdleEntry, PoolDestroyState, PoolState, TakeIdleResult

# How often the reconcile loop runs (the official 1.1.1 pools use a fixed 1 s tick).
RECONCILE_INTERVAL_SECONDS = 1.0
# Warmup creates admitted at once: the per-tick QPS budget with headroom for slow creates.
CREATE_ADMISSION_HEADROOM = 1.5
# Default idle entry TTL when no pool has set one yet.
DEFAULT_IDLE_TTL = timedelta(hours=24)


@dataclass
class ReconcileState:
    """Consecutive warmup failures: ``degraded_threshold`` of them make the pool DEGRADED,
    one success makes it HEALTHY again."""

    degraded_threshold: int
    failure_count: int = 0
    state: PoolState = PoolState.HEALTHY
    last_error: Optional[str] = None

    def record_success(self) -> None:
        self.failure_count = 0
        self.state = PoolState.HEALTHY
        self.last_error = None

    def record_failure(self, error_message: Optional[str]) -> None:
        self.failure_count += 1
        self.last_error = error_message
        if self.failure_count >= self.degraded_threshold:
            self.state = PoolState.DEGRADED

    def is_backoff_active(self) -> bool:
        # Kept for the snapshot's shape: create admission (QPS) replaced replenish backoff.
        return False


def plan_replenish(
    idle_count: int, max_idle: int, warming: int, warmup_concurrency: int, warmup_create_qps: int
) -> Tuple[int, int]:
    """``(to_remove, to_create)`` for one tick: shrink an over-full buffer first (at most
    ``warmup_concurrency`` per tick), else create up to ``warmup_create_qps`` toward
    ``max_idle`` counting the warmups already running."""
    excess = idle_count - max_idle
    if excess > 0:
        return min(excess, warmup_concurrency), 0
    deficit = max(0, max_idle - idle_count - warming)
    return 0, min(deficit, warmup_create_qps)


def _require_pool_name(pool_name: str) -> None:
    if not pool_name or not pool_name.strip():
        raise ValueError("pool_name must not be blank")


def now_utc() -> datetime:
    return datetime.now(timezone.utc)


@dataclass
class _PoolIdle:
    # Insertion order is hand-out order (FIFO: oldest warmed first); ``expires`` is the
    # membership set, so an id removed from it is skipped when the queue reaches it.
    queue: Deque[str] = field(default_factory=deque)
    expires: Dict[str, datetime] = field(default_factory=dict)


@dataclass
class _Tombstone:
    state: PoolDestroyState
    expires_at: Optional[datetime]


@dataclass
class _Lock:
    owner_id: str
    expires_at: datetime


class IdleBook:
    """In-memory pool state for any number of pools. Not thread-safe by itself: the
    stores call it under their lock, and no method awaits or blocks."""

    def __init__(self) -> None:
        self._idle: Dict[str, _PoolIdle] = {}
        self._idle_ttl: Dict[str, timedelta] = {}
        self._max_idle: Dict[str, int] = {}
        self._locks: Dict[str, _Lock] = {}
        self._tombstones: Dict[str, _Tombstone] = {}

    def take(self, pool_name: str, min_remaining_ttl: timedelta) -> TakeIdleResult:
        _require_pool_name(pool_name)
        pool = self._idle.get(pool_name)
        if pool is None:
            return TakeIdleResult(None)
        now = now_utc()
        cutoff = now + min_remaining_ttl
        discarded: List[str] = []
        while pool.queue:
            sandbox_id = pool.queue.popleft()
            expires_at = pool.expires.pop(sandbox_id, None)
            if expires_at is None:
                continue
            if expires_at > cutoff:
                return TakeIdleResult(sandbox_id, tuple(discarded))
            if expires_at > now:
                discarded.append(sandbox_id)
        return TakeIdleResult(None, tuple(discarded))

    def put(self, pool_name: str, sandbox_id: str) -> None:
        _require_pool_name(pool_name)
        if not sandbox_id or not sandbox_id.strip():
            raise ValueError("sandbox_id must not be blank")
        self.reject_if_destroyed(pool_name)
        pool = self._idle.setdefault(pool_name, _PoolIdle())
        now = now_utc()
        current = pool.expires.get(sandbox_id)
        if current is not None and current > now:
            return  # already idle: one id is handed out once
        if current is None:
            pool.queue.append(sandbox_id)
        pool.expires[sandbox_id] = now + self._idle_ttl.get(pool_name, DEFAULT_IDLE_TTL)

    def remove(self, pool_name: str, sandbox_id: str) -> None:
        _require_pool_name(pool_name)
        pool = self._idle.get(pool_name)
        if pool is not None:
            pool.expires.pop(sandbox_id, None)

    def reap(self, pool_name: str, now: datetime, min_remaining_ttl: timedelta) -> Tuple[str, ...]:
        _require_pool_name(pool_name)
        pool = self._idle.get(pool_name)
        if pool is None:
            return ()
        cutoff = now + min_remaining_ttl
        discarded: List[str] = []
        for sandbox_id, expires_at in list(pool.expires.items()):
            if expires_at <= cutoff:
                del pool.expires[sandbox_id]
                if expires_at > now:
                    discarded.append(sandbox_id)
        pool.queue = deque(s for s in pool.queue if s in pool.expires)
        return tuple(discarded)

    def entries(self, pool_name: str) -> List[IdleEntry]:
        _require_pool_name(pool_name)
        self.reap(pool_name, now_utc(), timedelta(0))
        pool = self._idle.get(pool_name)
        if pool is None:
            return []
        return [IdleEntry(s, pool.expires[s]) for s in pool.queue if s in pool.expires]

    def acquire_lock(self, pool_name: str, owner_id: str, ttl: timedelta, renew_only: bool) -> bool:
        _require_pool_name(pool_name)
        if not owner_id or not owner_id.strip():
            raise ValueError("owner_id must not be blank")
        if ttl.total_seconds() <= 0:
            raise ValueError("ttl must be positive")
        if self.destroy_state(pool_name) is not PoolDestroyState.ACTIVE:
            return False
        now = now_utc()
        lock = self._locks.get(pool_name)
        held_by_other = lock is not None and lock.expires_at > now and lock.owner_id != owner_id
        if held_by_other or (renew_only and (lock is None or lock.owner_id != owner_id or lock.expires_at <= now)):
            return False
        self._locks[pool_name] = _Lock(owner_id, now + ttl)
        return True

    def release_lock(self, pool_name: str, owner_id: str) -> None:
        _require_pool_name(pool_name)
        lock = self._locks.get(pool_name)
        if lock is not None and lock.owner_id == owner_id:
            del self._locks[pool_name]

    def get_max_idle(self, pool_name: str) -> Optional[int]:
        _require_pool_name(pool_name)
        return self._max_idle.get(pool_name)

    def set_max_idle(self, pool_name: str, max_idle: int) -> None:
        _require_pool_name(pool_name)
        if max_idle < 0:
            raise ValueError("max_idle must be >= 0")
        self.reject_if_destroyed(pool_name)
        self._max_idle[pool_name] = max_idle

    def set_idle_ttl(self, pool_name: str, idle_ttl: timedelta) -> None:
        _require_pool_name(pool_name)
        if idle_ttl.total_seconds() <= 0:
            raise ValueError("idle_ttl must be positive")
        self.reject_if_destroyed(pool_name)
        self._idle_ttl[pool_name] = idle_ttl

    def destroy_state(self, pool_name: str) -> PoolDestroyState:
        _require_pool_name(pool_name)
        tomb = self._tombstones.get(pool_name)
        if tomb is None:
            return PoolDestroyState.ACTIVE
        if tomb.expires_at is not None and tomb.expires_at <= now_utc():
            del self._tombstones[pool_name]  # the tombstone lapsed: the name is free again
            return PoolDestroyState.ACTIVE
        return tomb.state

    def begin_destroy(self, pool_name: str, owner_id: str) -> None:
        _require_pool_name(pool_name)
        if not owner_id or not owner_id.strip():
            raise ValueError("owner_id must not be blank")
        if self.destroy_state(pool_name) is PoolDestroyState.DESTROYED:
            raise PoolDestroyedException(f"Pool namespace is already DESTROYED: pool_name={pool_name}")
        self._tombstones[pool_name] = _Tombstone(PoolDestroyState.DESTROYING, None)

    def clear(self, pool_name: str) -> None:
        _require_pool_name(pool_name)
        self._idle.pop(pool_name, None)
        self._idle_ttl.pop(pool_name, None)
        self._max_idle.pop(pool_name, None)
        self._locks.pop(pool_name, None)

    def mark_destroyed(self, pool_name: str, owner_id: str, tombstone_ttl: Optional[timedelta]) -> None:
        _require_pool_name(pool_name)
        if not owner_id or not owner_id.strip():
            raise ValueError("owner_id must not be blank")
        if tombstone_ttl is not None and tombstone_ttl.total_seconds() <= 0:
            raise ValueError("tombstone_ttl must be positive")
        expires_at = None if tombstone_ttl is None else now_utc() + tombstone_ttl
        self._tombstones[pool_name] = _Tombstone(PoolDestroyState.DESTROYED, expires_at)

    def reject_if_destroyed(self, pool_name: str) -> None:
        state = self.destroy_state(pool_name)
        if state is not PoolDestroyState.ACTIVE:
            raise PoolDestroyedException(f"Pool namespace is {state.value}: pool_name={pool_name}")
