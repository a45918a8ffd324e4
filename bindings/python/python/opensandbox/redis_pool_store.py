# Generated from opensandbox/async_redis_pool_store.py by bindings/python/scripts/gen_sync.py (unasync): do not edit.
"""``RedisPoolStateStore``: pool state shared through Redis (``redis``, blocking).

Install the ``pool-redis`` extra. The client is the caller's: the store never closes it.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, Callable, List, Optional, Tuple, TypeVar

from opensandbox import _redis_pool_layout as layout
from opensandbox.exceptions import PoolDestroyedException, PoolStateStoreUnavailableException
from opensandbox.pool_types import IdleEntry, PoolDestroyState, StoreCounters, TakeIdleResult

try:
    from redis import Redis
except ImportError as exc:  # pragma: no cover - only without the extra
    raise ImportError("Install opensandbox[pool-redis] to use opensandbox.pool_redis") from exc

T = TypeVar("T")


class RedisPoolStateStore:
    """Distributed pool store over a caller-managed Redis client."""

    DEFAULT_KEY_PREFIX = layout.DEFAULT_KEY_PREFIX

    def __init__(self, redis: Redis, key_prefix: str = DEFAULT_KEY_PREFIX) -> None:
        if not isinstance(redis, Redis):
            raise TypeError(
                f"{type(self).__name__} needs a {Redis.__module__}.Redis client, got {type(redis).__name__}"
            )
        for name in layout.REQUIRED_CLIENT_METHODS:
            if not callable(getattr(redis, name, None)):
                raise TypeError(f"{type(self).__name__} needs a Redis client with a callable {name}()")
        self._redis: Any = redis  # redis-py types every call as sync-or-async: checked above
        self._prefix = key_prefix
        self._default_idle_ttl = timedelta(hours=24)

    def _keys(self, pool_name: str) -> layout.PoolKeys:
        return layout.PoolKeys(self._prefix, pool_name)

    def _execute(self, operation: str, pool_name: str, block: Callable[[], T]) -> T:
        """Runs ``block``; any Redis failure becomes ``PoolStateStoreUnavailableException``
        naming the operation and pool (a fenced write stays ``PoolDestroyedException``)."""
        try:
            return block()
        except PoolDestroyedException:
            raise
        except Exception as exc:
            raise PoolStateStoreUnavailableException(
                f"Redis pool state store operation failed: operation={operation} pool_name={pool_name}: {exc}",
                exc,
            ) from exc

    def _fenced(self, pool_name: str, result: Any) -> Any:
        if layout.is_reply(result, -1):
            state = self.get_destroy_state(pool_name)
            raise PoolDestroyedException(f"Pool namespace is {state.value}: pool_name={pool_name}")
        return result

    def try_take_idle(self, pool_name: str) -> Optional[str]:
        return (self._take(pool_name, 0)).sandbox_id

    def try_take_idle_min_ttl(self, pool_name: str, min_remaining_ttl: timedelta) -> TakeIdleResult:
        """Takes the oldest idle id with more than ``min_remaining_ttl`` left; the alive ones
        skipped on the way are returned for the caller to kill."""
        return self._take(pool_name, max(0, layout.millis(min_remaining_ttl)))

    def _take(self, pool_name: str, min_remaining_ms: int) -> TakeIdleResult:
        keys = self._keys(pool_name)

        def op() -> TakeIdleResult:
            reply = self._redis.eval(layout.TAKE_IDLE, 2, keys.idle_list, keys.idle_expires, str(min_remaining_ms))
            return layout.decode_take(reply)

        return self._execute("try_take_idle", pool_name, op)

    def put_idle(self, pool_name: str, sandbox_id: str) -> None:
        if not sandbox_id or not sandbox_id.strip():
            raise ValueError("sandbox_id must not be blank")
        keys = self._keys(pool_name)
        ttl_ms = max(1, layout.millis(self._idle_ttl(pool_name)))

        def op() -> None:
            reply = self._redis.eval(
                layout.PUT_IDLE, 3, keys.idle_list, keys.idle_expires, keys.destroy_state, sandbox_id, str(ttl_ms)
            )
            self._fenced(pool_name, reply)

        self._execute("put_idle", pool_name, op)

    def remove_idle(self, pool_name: str, sandbox_id: str) -> None:
        keys = self._keys(pool_name)

        def op() -> None:
            self._redis.hdel(keys.idle_expires, sandbox_id)
            self._redis.lrem(keys.idle_list, 0, sandbox_id)

        self._execute("remove_idle", pool_name, op)

    def _lock_script(self, operation: str, script: str, pool_name: str, owner_id: str, ttl: timedelta) -> bool:
        layout.validate_owner_and_ttl(owner_id, ttl)
        keys = self._keys(pool_name)

        def op() -> bool:
            reply = self._redis.eval(
                script, 2, keys.lock, keys.destroy_state, owner_id, str(max(1, layout.millis(ttl)))
            )
            return layout.is_reply(reply, 1)

        return self._execute(operation, pool_name, op)

    def try_acquire_primary_lock(self, pool_name: str, owner_id: str, ttl: timedelta) -> bool:
        return self._lock_script("try_acquire_primary_lock", layout.ACQUIRE_LOCK, pool_name, owner_id, ttl)

    def renew_primary_lock(self, pool_name: str, owner_id: str, ttl: timedelta) -> bool:
        return self._lock_script("renew_primary_lock", layout.RENEW_LOCK, pool_name, owner_id, ttl)

    def release_primary_lock(self, pool_name: str, owner_id: str) -> None:
        keys = self._keys(pool_name)

        def op() -> None:
            self._redis.eval(layout.RELEASE_LOCK, 1, keys.lock, owner_id)

        self._execute("release_primary_lock", pool_name, op)

    def reap_expired_idle(self, pool_name: str, now: datetime) -> None:
        self._reap(pool_name, 0)

    def reap_expired_idle_min_ttl(self, pool_name: str, now: datetime, min_remaining_ttl: timedelta) -> Tuple[str, ...]:
        """Also drops entries with less than ``min_remaining_ttl`` left; returns those still alive."""
        return self._reap(pool_name, max(0, layout.millis(min_remaining_ttl)))

    def _reap(self, pool_name: str, min_remaining_ms: int) -> Tuple[str, ...]:
        keys = self._keys(pool_name)

        def op() -> Tuple[str, ...]:
            reply = self._redis.eval(layout.REAP_IDLE, 2, keys.idle_list, keys.idle_expires, str(min_remaining_ms))
            return tuple(layout.decode(v) for v in reply or ())

        return self._execute("reap_expired_idle", pool_name, op)

    def snapshot_counters(self, pool_name: str) -> StoreCounters:
        keys = self._keys(pool_name)

        def op() -> StoreCounters:
            return StoreCounters(idle_count=int(self._redis.hlen(keys.idle_expires)))

        return self._execute("snapshot_counters", pool_name, op)

    def snapshot_idle_entries(self, pool_name: str) -> List[IdleEntry]:
        keys = self._keys(pool_name)

        def op() -> List[IdleEntry]:
            ids = [layout.decode(v) for v in self._redis.lrange(keys.idle_list, 0, -1)]
            raw = self._redis.hgetall(keys.idle_expires)
            expires = {layout.decode(k): int(layout.decode(v)) for k, v in raw.items()}
            return [
                IdleEntry(sandbox_id, datetime.fromtimestamp(expires[sandbox_id] / 1000, timezone.utc))
                for sandbox_id in ids
                if sandbox_id in expires
            ]

        return self._execute("snapshot_idle_entries", pool_name, op)

    def _get_int(self, operation: str, pool_name: str, key: str) -> Optional[int]:
        def op() -> Any:
            return self._redis.get(key)

        value = self._execute(operation, pool_name, op)
        if value is None:
            return None
        try:
            return int(layout.decode(value))
        except ValueError:
            return None  # a foreign value under our key: treat as unset

    def get_max_idle(self, pool_name: str) -> Optional[int]:
        return self._get_int("get_max_idle", pool_name, self._keys(pool_name).max_idle)

    def _set_fenced(self, operation: str, pool_name: str, key: str, value: int) -> None:
        keys = self._keys(pool_name)

        def op() -> None:
            self._fenced(pool_name, self._redis.eval(layout.SET_FENCED, 2, key, keys.destroy_state, str(value)))

        self._execute(operation, pool_name, op)

    def set_max_idle(self, pool_name: str, max_idle: int) -> None:
        if max_idle < 0:
            raise ValueError("max_idle must be >= 0")
        self._set_fenced("set_max_idle", pool_name, self._keys(pool_name).max_idle, max_idle)

    def set_idle_entry_ttl(self, pool_name: str, idle_ttl: timedelta) -> None:
        if idle_ttl.total_seconds() <= 0:
            raise ValueError("idle_ttl must be positive")
        keys = self._keys(pool_name)
        self._set_fenced("set_idle_entry_ttl", pool_name, keys.idle_ttl, max(1, layout.millis(idle_ttl)))

    def _idle_ttl(self, pool_name: str) -> timedelta:
        ms = self._get_int("resolve_idle_ttl", pool_name, self._keys(pool_name).idle_ttl)
        return self._default_idle_ttl if ms is None else timedelta(milliseconds=max(1, ms))

    def get_destroy_state(self, pool_name: str) -> PoolDestroyState:
        keys = self._keys(pool_name)

        def op() -> Any:
            return self._redis.get(keys.destroy_state)

        value = self._execute("get_destroy_state", pool_name, op)
        if value is None:
            return PoolDestroyState.ACTIVE
        decoded = layout.decode(value)
        for state in (PoolDestroyState.DESTROYING, PoolDestroyState.DESTROYED):
            if decoded == state.value:
                return state
        return PoolDestroyState.ACTIVE

    def begin_destroy(self, pool_name: str, owner_id: str) -> None:
        if not owner_id or not owner_id.strip():
            raise ValueError("owner_id must not be blank")
        keys = self._keys(pool_name)

        def op() -> Any:
            return self._redis.eval(
                layout.BEGIN_DESTROY,
                2,
                keys.destroy_state,
                keys.destroy_owner,
                PoolDestroyState.DESTROYING.value,
                PoolDestroyState.DESTROYED.value,
                owner_id,
            )

        if layout.is_reply(self._execute("begin_destroy", pool_name, op), -1):
            raise PoolDestroyedException(f"Pool namespace is already DESTROYED: pool_name={pool_name}")

    def clear_pool_state(self, pool_name: str) -> None:
        keys = self._keys(pool_name)

        def op() -> None:
            self._redis.delete(*keys.persistent())

        self._execute("clear_pool_state", pool_name, op)

    def mark_destroyed(self, pool_name: str, owner_id: str, tombstone_ttl: Optional[timedelta]) -> None:
        if not owner_id or not owner_id.strip():
            raise ValueError("owner_id must not be blank")
        if tombstone_ttl is not None and tombstone_ttl.total_seconds() <= 0:
            raise ValueError("tombstone_ttl must be positive")
        keys = self._keys(pool_name)
        px = None if tombstone_ttl is None else max(1, layout.millis(tombstone_ttl))

        def op() -> None:
            self._redis.set(keys.destroy_state, PoolDestroyState.DESTROYED.value, px=px)
            self._redis.set(keys.destroy_owner, owner_id, px=px)

        self._execute("mark_destroyed", pool_name, op)


__all__ = ["RedisPoolStateStore"]
