"""``AsyncRedisPoolStateStore``: pool state shared through Redis (``redis.asyncio``).

Install the ``pool-redis`` extra. The client is the caller's: the store never closes it.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, Awaitable, Callable, List, Optional, Tuple, TypeVar

from opensandbox import _redis_pool_layout as layout
from opensandbox.exceptions import PoolDestroyedException, PoolStateStoreUnavailableException
from opensandbox.pool_types import IdleEntry, PoolDestroyState, StoreCounters, TakeIdleResult

try:
    from redis.asyncio import Redis
except ImportError as exc:  # pragma: no cover - only without the extra
    raise ImportError("Install opensandbox[pool-redis] to use opensandbox.pool_redis") from exc

T = TypeVar("T")


class AsyncRedisPoolStateStore:
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

    async def _execute(self, operation: str, pool_name: str, block: Callable[[], Awaitable[T]]) -> T:
        """Runs ``block``; any Redis failure becomes ``PoolStateStoreUnavailableException``
        naming the operation and pool (a fenced write stays ``PoolDestroyedException``)."""
        try:
            return await block()
        except PoolDestroyedException:
            raise
        except Exception as exc:
            raise PoolStateStoreUnavailableException(
                f"Redis pool state store operation failed: operation={operation} pool_name={pool_name}: {exc}",
                exc,
            ) from exc

    async def _fenced(self, pool_name: str, result: Any) -> Any:
        if layout.is_reply(result, -1):
            state = await self.get_destroy_state(pool_name)
            raise PoolDestroyedException(f"Pool namespace is {state.value}: pool_name={pool_name}")
        return result

    async def try_take_idle(self, pool_name: str) -> Optional[str]:
        return (await self._take(pool_name, 0)).sandbox_id

    async def try_take_idle_min_ttl(self, pool_name: str, min_remaining_ttl: timedelta) -> TakeIdleResult:
        """Takes the oldest idle id with more than ``min_remaining_ttl`` left; the alive ones
        skipped on the way are returned for the caller to kill."""
        return await self._take(pool_name, max(0, layout.millis(min_remaining_ttl)))

    async def _take(self, pool_name: str, min_remaining_ms: int) -> TakeIdleResult:
        keys = self._keys(pool_name)

        async def op() -> TakeIdleResult:
            reply = await self._redis.eval(
                layout.TAKE_IDLE, 2, keys.idle_list, keys.idle_expires, str(min_remaining_ms)
            )
            return layout.decode_take(reply)

        return await self._execute("try_take_idle", pool_name, op)

    async def put_idle(self, pool_name: str, sandbox_id: str) -> None:
        if not sandbox_id or not sandbox_id.strip():
            raise ValueError("sandbox_id must not be blank")
        keys = self._keys(pool_name)
        ttl_ms = max(1, layout.millis(await self._idle_ttl(pool_name)))

        async def op() -> None:
            reply = await self._redis.eval(
                layout.PUT_IDLE, 3, keys.idle_list, keys.idle_expires, keys.destroy_state, sandbox_id, str(ttl_ms)
            )
            await self._fenced(pool_name, reply)

        await self._execute("put_idle", pool_name, op)

    async def remove_idle(self, pool_name: str, sandbox_id: str) -> None:
        keys = self._keys(pool_name)

        async def op() -> None:
            await self._redis.hdel(keys.idle_expires, sandbox_id)
            await self._redis.lrem(keys.idle_list, 0, sandbox_id)

        await self._execute("remove_idle", pool_name, op)

    async def _lock_script(self, operation: str, script: str, pool_name: str, owner_id: str, ttl: timedelta) -> bool:
        layout.validate_owner_and_ttl(owner_id, ttl)
        keys = self._keys(pool_name)

        async def op() -> bool:
            reply = await self._redis.eval(
                script, 2, keys.lock, keys.destroy_state, owner_id, str(max(1, layout.millis(ttl)))
            )
            return layout.is_reply(reply, 1)

        return await self._execute(operation, pool_name, op)

    async def try_acquire_primary_lock(self, pool_name: str, owner_id: str, ttl: timedelta) -> bool:
        return await self._lock_script("try_acquire_primary_lock", layout.ACQUIRE_LOCK, pool_name, owner_id, ttl)

    async def renew_primary_lock(self, pool_name: str, owner_id: str, ttl: timedelta) -> bool:
        return await self._lock_script("renew_primary_lock", layout.RENEW_LOCK, pool_name, owner_id, ttl)

    async def release_primary_lock(self, pool_name: str, owner_id: str) -> None:
        keys = self._keys(pool_name)

        async def op() -> None:
            await self._redis.eval(layout.RELEASE_LOCK, 1, keys.lock, owner_id)

        await self._execute("release_primary_lock", pool_name, op)

    async def reap_expired_idle(self, pool_name: str, now: datetime) -> None:
        await self._reap(pool_name, 0)

    async def reap_expired_idle_min_ttl(
        self, pool_name: str, now: datetime, min_remaining_ttl: timedelta
    ) -> Tuple[str, ...]:
        """Also drops entries with less than ``min_remaining_ttl`` left; returns those still alive."""
        return await self._reap(pool_name, max(0, layout.millis(min_remaining_ttl)))

    async def _reap(self, pool_name: str, min_remaining_ms: int) -> Tuple[str, ...]:
        keys = self._keys(pool_name)

        async def op() -> Tuple[str, ...]:
            reply = await self._redis.eval(
                layout.REAP_IDLE, 2, keys.idle_list, keys.idle_expires, str(min_remaining_ms)
            )
            return tuple(layout.decode(v) for v in reply or ())

        return await self._execute("reap_expired_idle", pool_name, op)

    async def snapshot_counters(self, pool_name: str) -> StoreCounters:
        keys = self._keys(pool_name)

        async def op() -> StoreCounters:
            return StoreCounters(idle_count=int(await self._redis.hlen(keys.idle_expires)))

        return await self._execute("snapshot_counters", pool_name, op)

    async def snapshot_idle_entries(self, pool_name: str) -> List[IdleEntry]:
        keys = self._keys(pool_name)

        async def op() -> List[IdleEntry]:
            ids = [layout.decode(v) for v in await self._redis.lrange(keys.idle_list, 0, -1)]
            raw = await self._redis.hgetall(keys.idle_expires)
            expires = {layout.decode(k): int(layout.decode(v)) for k, v in raw.items()}
            return [
                IdleEntry(sandbox_id, datetime.fromtimestamp(expires[sandbox_id] / 1000, timezone.utc))
                for sandbox_id in ids
                if sandbox_id in expires
            ]

        return await self._execute("snapshot_idle_entries", pool_name, op)

    async def _get_int(self, operation: str, pool_name: str, key: str) -> Optional[int]:
        async def op() -> Any:
            return await self._redis.get(key)

        value = await self._execute(operation, pool_name, op)
        if value is None:
            return None
        try:
            return int(layout.decode(value))
        except ValueError:
            return None  # a foreign value under our key: treat as unset

    async def get_max_idle(self, pool_name: str) -> Optional[int]:
        return await self._get_int("get_max_idle", pool_name, self._keys(pool_name).max_idle)

    async def _set_fenced(self, operation: str, pool_name: str, key: str, value: int) -> None:
        keys = self._keys(pool_name)

        async def op() -> None:
            await self._fenced(
                pool_name, await self._redis.eval(layout.SET_FENCED, 2, key, keys.destroy_state, str(value))
            )

        await self._execute(operation, pool_name, op)

    async def set_max_idle(self, pool_name: str, max_idle: int) -> None:
        if max_idle < 0:
            raise ValueError("max_idle must be >= 0")
        await self._set_fenced("set_max_idle", pool_name, self._keys(pool_name).max_idle, max_idle)

    async def set_idle_entry_ttl(self, pool_name: str, idle_ttl: timedelta) -> None:
        if idle_ttl.total_seconds() <= 0:
            raise ValueError("idle_ttl must be positive")
        keys = self._keys(pool_name)
        await self._set_fenced("set_idle_entry_ttl", pool_name, keys.idle_ttl, max(1, layout.millis(idle_ttl)))

    async def _idle_ttl(self, pool_name: str) -> timedelta:
        ms = await self._get_int("resolve_idle_ttl", pool_name, self._keys(pool_name).idle_ttl)
        return self._default_idle_ttl if ms is None else timedelta(milliseconds=max(1, ms))

    async def get_destroy_state(self, pool_name: str) -> PoolDestroyState:
        keys = self._keys(pool_name)

        async def op() -> Any:
            return await self._redis.get(keys.destroy_state)

        value = await self._execute("get_destroy_state", pool_name, op)
        if value is None:
            return PoolDestroyState.ACTIVE
        decoded = layout.decode(value)
        for state in (PoolDestroyState.DESTROYING, PoolDestroyState.DESTROYED):
            if decoded == state.value:
                return state
        return PoolDestroyState.ACTIVE

    async def begin_destroy(self, pool_name: str, owner_id: str) -> None:
        if not owner_id or not owner_id.strip():
            raise ValueError("owner_id must not be blank")
        keys = self._keys(pool_name)

        async def op() -> Any:
            return await self._redis.eval(
                layout.BEGIN_DESTROY,
                2,
                keys.destroy_state,
                keys.destroy_owner,
                PoolDestroyState.DESTROYING.value,
                PoolDestroyState.DESTROYED.value,
                owner_id,
            )

        if layout.is_reply(await self._execute("begin_destroy", pool_name, op), -1):
            raise PoolDestroyedException(f"Pool namespace is already DESTROYED: pool_name={pool_name}")

    async def clear_pool_state(self, pool_name: str) -> None:
        keys = self._keys(pool_name)

        async def op() -> None:
            await self._redis.delete(*keys.persistent())

        await self._execute("clear_pool_state", pool_name, op)

    async def mark_destroyed(self, pool_name: str, owner_id: str, tombstone_ttl: Optional[timedelta]) -> None:
        if not owner_id or not owner_id.strip():
            raise ValueError("owner_id must not be blank")
        if tombstone_ttl is not None and tombstone_ttl.total_seconds() <= 0:
            raise ValueError("tombstone_ttl must be positive")
        keys = self._keys(pool_name)
        px = None if tombstone_ttl is None else max(1, layout.millis(tombstone_ttl))

        async def op() -> None:
            await self._redis.set(keys.destroy_state, PoolDestroyState.DESTROYED.value, px=px)
            await self._redis.set(keys.destroy_owner, owner_id, px=px)

        await self._execute("mark_destroyed", pool_name, op)


__all__ = ["AsyncRedisPoolStateStore"]
