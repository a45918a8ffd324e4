"""The Redis layout of the pool state stores: key names and the Lua scripts that make each
state change atomic. The layout is the official SDKs' (Python, Kotlin, Go), so pools of any
of them can share one Redis namespace.

Per pool, under ``{prefix}:{<base64url(pool_name)>}:`` (the braces make one Redis Cluster
hash slot per pool, so multi-key scripts work on a cluster):

- ``idle:list``      LIST of idle ids, oldest first (hand-out order)
- ``idle:expires``   HASH id → expiry in ms since the epoch (membership: an id is idle
  only while it is in this hash; the list may hold stale ids, skipped on take)
- ``lock``           the primary lock (value = owner id, PX = lock TTL)
- ``maxIdle``, ``idleTtlMillis``  shared settings
- ``destroy:state``, ``destroy:owner``  the destroy tombstone (any value fences writes)

Every time is Redis's own clock (``TIME``), so instances with skewed clocks agree.
"""

from __future__ import annotations

import base64
from datetime import timedelta
from typing import Any, Tuple

from opensandbox.pool_types import TakeIdleResult

DEFAULT_KEY_PREFIX = "opensandbox:pool"

_NOW_MS = """
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# KEYS: idle list, idle expiry hash. ARGV: minimum remaining TTL (ms).
# Returns nil, or {taken id or '', {alive ids skipped for too little TTL}}.
TAKE_IDLE = (
    _NOW_MS
    + """
local cutoff_ms = now_ms + (tonumber(ARGV[1]) or 0)
local skipped = {}
while true do
  local id = redis.call('LPOP', KEYS[1])
  if not id then
    if #skipped == 0 then return nil end
    return {'', skipped}
  end
  local exp = redis.call('HGET', KEYS[2], id)
  if exp then
    redis.call('HDEL', KEYS[2], id)
    exp = tonumber(exp)
    if exp > cutoff_ms then return {id, skipped} end
    if exp > now_ms then table.insert(skipped, id) end
  end
end
"""
)

# KEYS: idle list, idle expiry hash, destroy state. ARGV: id, idle TTL (ms).
# Returns -1 when the pool is fenced, 0 when the id is already idle, 1 when added.
PUT_IDLE = (
    """
if redis.call('GET', KEYS[3]) then return -1 end
"""
    + _NOW_MS
    + """
local current = redis.call('HGET', KEYS[2], ARGV[1])
if current and tonumber(current) > now_ms then return 0 end
if not current then redis.call('RPUSH', KEYS[1], ARGV[1]) end
redis.call('HSET', KEYS[2], ARGV[1], now_ms + tonumber(ARGV[2]))
return 1
"""
)

# KEYS: lock, destroy state. ARGV: owner, TTL (ms). Takes a free lock or extends our own.
ACQUIRE_LOCK = """
if redis.call('GET', KEYS[2]) then return 0 end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""

# KEYS: lock, destroy state. ARGV: owner, TTL (ms). Extends only a lock we still hold.
RENEW_LOCK = """
if redis.call('GET', KEYS[2]) then return 0 end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""

# KEYS: lock. ARGV: owner. Never deletes another owner's lock.
RELEASE_LOCK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

# KEYS: idle list, idle expiry hash. ARGV: minimum remaining TTL (ms).
# Drops entries below the threshold; returns the ones still alive on the server.
REAP_IDLE = (
    _NOW_MS
    + """
local cutoff_ms = now_ms + (tonumber(ARGV[1]) or 0)
local alive = {}
local entries = redis.call('HGETALL', KEYS[2])
for i = 1, #entries, 2 do
  local exp = tonumber(entries[i + 1])
  if exp <= cutoff_ms then
    redis.call('HDEL', KEYS[2], entries[i])
    redis.call('LREM', KEYS[1], 0, entries[i])
    if exp > now_ms then table.insert(alive, entries[i]) end
  end
end
return alive
"""
)

# KEYS: value key, destroy state. ARGV: value. -1 when fenced.
SET_FENCED = """
if redis.call('GET', KEYS[2]) then return -1 end
redis.call('SET', KEYS[1], ARGV[1])
return 1
"""

# KEYS: destroy state, destroy owner. ARGV: 'DESTROYING', 'DESTROYED', owner. -1 when already destroyed.
BEGIN_DESTROY = """
if redis.call('GET', KEYS[1]) == ARGV[2] then return -1 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[3])
return 1
"""

# Methods a caller-provided client must have (checked at construction, not on first use).
REQUIRED_CLIENT_METHODS = ("eval", "get", "set", "hdel", "lrem", "hlen", "lrange", "hgetall", "delete")


class PoolKeys:
    """The keys of one pool under ``prefix``."""

    def __init__(self, prefix: str, pool_name: str) -> None:
        if not pool_name or not pool_name.strip():
            raise ValueError("pool_name must not be blank")
        tag = base64.urlsafe_b64encode(pool_name.encode()).decode().rstrip("=")
        base = f"{prefix}:{{{tag}}}:"
        self.idle_list = base + "idle:list"
        self.idle_expires = base + "idle:expires"
        self.lock = base + "lock"
        self.max_idle = base + "maxIdle"
        self.idle_ttl = base + "idleTtlMillis"
        self.destroy_state = base + "destroy:state"
        self.destroy_owner = base + "destroy:owner"

    def persistent(self) -> Tuple[str, ...]:
        """Everything but the tombstone (what a destroy clears)."""
        return (self.idle_list, self.idle_expires, self.lock, self.max_idle, self.idle_ttl)


def millis(value: timedelta) -> int:
    return int(value.total_seconds() * 1000)


def decode(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def is_reply(result: Any, expected: int) -> bool:
    return bool(result == expected or result == str(expected).encode() or result == str(expected))


def decode_take(result: Any) -> TakeIdleResult:
    """The ``TAKE_IDLE`` reply as a :class:`TakeIdleResult`."""
    if result is None:
        return TakeIdleResult(None)
    if isinstance(result, (list, tuple)) and result:
        taken = decode(result[0]) if result[0] is not None else ""
        skipped = tuple(decode(v) for v in (result[1] if len(result) > 1 and result[1] else ()))
        return TakeIdleResult(taken or None, skipped)
    raise ValueError(f"unexpected reply of the take-idle script: {result!r}")


def validate_owner_and_ttl(owner_id: str, ttl: timedelta) -> None:
    if not owner_id or not owner_id.strip():
        raise ValueError("owner_id must not be blank")
    if ttl.total_seconds() <= 0:
        raise ValueError("ttl must be positive")
