// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.infrastructure.pool;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.PoolDestroyedException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.PoolStateStoreUnavailableException;
import com.alibaba.opensandbox.sandbox.domain.pool.IdleEntry;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolDestroyState;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolStateStore;
import com.alibaba.opensandbox.sandbox.domain.pool.StoreCounters;
import com.alibaba.opensandbox.sandbox.domain.pool.TakeIdleResult;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.Supplier;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.params.SetParams;

/**
 * A {@link PoolStateStore} in Redis, for pools shared by several processes. Per pool (under
 * {@code keyPrefix}): a list of idle ids in hand-out order, a sorted set of their expiry times (the
 * membership), the primary lock (a key holding the owner id, with a TTL), the shared max idle target and
 * the idle entry TTL. Takes, puts, reaps and lock renewals are Lua scripts, so each is atomic.
 *
 * <p>The caller creates, configures and closes the client, which must be safe for concurrent use
 * ({@code JedisPooled}). Standalone Redis (or a compatible proxy) only: the keys of one pool are not
 * hash-tagged for Redis Cluster. Redis failures surface as {@link PoolStateStoreUnavailableException}.
 */
public final class RedisPoolStateStore implements PoolStateStore {
    private static final long DEFAULT_IDLE_TTL_MS = Duration.ofHours(24).toMillis();

    // KEYS: list, zset. ARGV: now ms, cutoff ms. Returns {id or "", discarded...}.
    private static final String TAKE = String.join("\n",
            "local out = {''}",
            "while true do",
            "  local id = redis.call('LPOP', KEYS[1])",
            "  if not id then break end",
            "  local exp = redis.call('ZSCORE', KEYS[2], id)",
            "  if exp then",
            "    redis.call('ZREM', KEYS[2], id)",
            "    exp = tonumber(exp)",
            "    if exp > tonumber(ARGV[2]) then out[1] = id; break end",
            "    if exp > tonumber(ARGV[1]) then table.insert(out, id) end",
            "  end",
            "end",
            "return out");
    // KEYS: list, zset, ttl key, destroy key. ARGV: id, now ms, default ttl ms. -1: fenced.
    private static final String PUT = String.join("\n",
            "if redis.call('EXISTS', KEYS[4]) == 1 then return -1 end",
            "local cur = redis.call('ZSCORE', KEYS[2], ARGV[1])",
            "local now = tonumber(ARGV[2])",
            "if cur and tonumber(cur) > now then return 0 end",
            "if not cur then redis.call('RPUSH', KEYS[1], ARGV[1]) end",
            "local ttl = tonumber(redis.call('GET', KEYS[3]) or ARGV[3])",
            "redis.call('ZADD', KEYS[2], now + ttl, ARGV[1])",
            "return 1");
    // KEYS: list, zset. ARGV: id.
    private static final String REMOVE = String.join("\n",
            "redis.call('ZREM', KEYS[2], ARGV[1])",
            "redis.call('LREM', KEYS[1], 0, ARGV[1])",
            "return 1");
    // KEYS: list, zset. ARGV: now ms, cutoff ms. Returns the alive evicted ids.
    private static final String REAP = String.join("\n",
            "local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[2], 'WITHSCORES')",
            "local out = {}",
            "for i = 1, #ids, 2 do",
            "  redis.call('ZREM', KEYS[2], ids[i])",
            "  redis.call('LREM', KEYS[1], 0, ids[i])",
            "  if tonumber(ids[i + 1]) > tonumber(ARGV[1]) then table.insert(out, ids[i]) end",
            "end",
            "return out");
    // KEYS: lock, destroy key. ARGV: owner, ttl ms, renew-only flag ("1").
    private static final String LOCK = String.join("\n",
            "if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end",
            "local cur = redis.call('GET', KEYS[1])",
            "if cur == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]); return 1 end",
            "if cur or ARGV[3] == '1' then return 0 end",
            "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])",
            "return 1");
    // KEYS: destroy key. ARGV: DESTROYED. 0: already destroyed.
    private static final String BEGIN_DESTROY = String.join("\n",
            "if redis.call('GET', KEYS[1]) == ARGV[1] then return 0 end",
            "redis.call('SET', KEYS[1], 'DESTROYING')",
            "return 1");
    // KEYS: lock. ARGV: owner.
    private static final String UNLOCK = String.join("\n",
            "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end",
            "return 1");

    private final UnifiedJedis redis;
    private final String keyPrefix;

    public RedisPoolStateStore(UnifiedJedis redis, String keyPrefix) {
        if (redis == null) {
            throw new InvalidArgumentException("redis client must not be null");
        }
        if (keyPrefix == null || keyPrefix.trim().isEmpty()) {
            throw new InvalidArgumentException("keyPrefix must not be blank");
        }
        this.redis = redis;
        this.keyPrefix = keyPrefix;
    }

    private String key(String poolName, String part) {
        if (poolName == null || poolName.trim().isEmpty()) {
            throw new InvalidArgumentException("poolName must not be blank");
        }
        return keyPrefix + ":" + poolName + ":" + part;
    }

    private List<String> idleKeys(String poolName) {
        return List.of(key(poolName, "idle:order"), key(poolName, "idle:expires"));
    }

    private <T> T call(String what, Supplier<T> op) {
        try {
            return op.get();
        } catch (JedisException e) {
            throw new PoolStateStoreUnavailableException("Redis pool state store: " + what + " failed: " + e.getMessage(), e);
        }
    }

    private static long nowMs() {
        return System.currentTimeMillis();
    }

    @Override
    public String tryTakeIdle(String poolName) {
        return tryTakeIdle(poolName, Duration.ZERO).getSandboxId();
    }

    @Override
    public TakeIdleResult tryTakeIdle(String poolName, Duration minRemainingTtl) {
        List<String> keys = idleKeys(poolName);
        long now = nowMs();
        long cutoff = now + (minRemainingTtl == null ? 0 : minRemainingTtl.toMillis());
        List<?> r = call("take", () -> (List<?>) redis.eval(TAKE, keys, List.of(Long.toString(now), Long.toString(cutoff))));
        String id = String.valueOf(r.get(0));
        List<String> discarded = new ArrayList<>();
        for (int i = 1; i < r.size(); i++) {
            discarded.add(String.valueOf(r.get(i)));
        }
        return new TakeIdleResult(id.isEmpty() ? null : id, discarded);
    }

    @Override
    public void putIdle(String poolName, String sandboxId) {
        if (sandboxId == null || sandboxId.trim().isEmpty()) {
            throw new InvalidArgumentException("sandboxId must not be blank");
        }
        List<String> keys = new ArrayList<>(idleKeys(poolName));
        keys.add(key(poolName, "idle:ttl_ms"));
        keys.add(key(poolName, "destroy"));
        Object r = call("put", () -> redis.eval(PUT, keys,
                List.of(sandboxId, Long.toString(nowMs()), Long.toString(DEFAULT_IDLE_TTL_MS))));
        if (Long.valueOf(-1).equals(r)) {
            throw fenced(poolName);
        }
    }

    @Override
    public void removeIdle(String poolName, String sandboxId) {
        call("remove", () -> redis.eval(REMOVE, idleKeys(poolName), List.of(sandboxId)));
    }

    private boolean lock(String poolName, String ownerId, Duration ttl, boolean renewOnly) {
        if (ownerId == null || ownerId.trim().isEmpty()) {
            throw new InvalidArgumentException("ownerId must not be blank");
        }
        if (ttl == null || ttl.toMillis() <= 0) {
            throw new InvalidArgumentException("ttl must be positive");
        }
        Object r = call("primary lock", () -> redis.eval(LOCK, List.of(key(poolName, "primary"), key(poolName, "destroy")),
                List.of(ownerId, Long.toString(ttl.toMillis()), renewOnly ? "1" : "0")));
        return Long.valueOf(1).equals(r);
    }

    @Override
    public boolean tryAcquirePrimaryLock(String poolName, String ownerId, Duration ttl) {
        return lock(poolName, ownerId, ttl, false);
    }

    @Override
    public boolean renewPrimaryLock(String poolName, String ownerId, Duration ttl) {
        return lock(poolName, ownerId, ttl, true);
    }

    @Override
    public void releasePrimaryLock(String poolName, String ownerId) {
        call("unlock", () -> redis.eval(UNLOCK, List.of(key(poolName, "primary")), List.of(String.valueOf(ownerId))));
    }

    @Override
    public void reapExpiredIdle(String poolName, Instant now) {
        reapExpiredIdle(poolName, now, Duration.ZERO);
    }

    @Override
    public List<String> reapExpiredIdle(String poolName, Instant now, Duration minRemainingTtl) {
        long n = now.toEpochMilli();
        long cutoff = n + (minRemainingTtl == null ? 0 : minRemainingTtl.toMillis());
        List<?> r = call("reap", () -> (List<?>) redis.eval(REAP, idleKeys(poolName),
                List.of(Long.toString(n), Long.toString(cutoff))));
        List<String> out = new ArrayList<>();
        for (Object o : r) {
            out.add(String.valueOf(o));
        }
        return out;
    }

    @Override
    public StoreCounters snapshotCounters(String poolName) {
        long now = nowMs();
        long n = call("count", () -> redis.zcount(key(poolName, "idle:expires"), "(" + now, "+inf"));
        return new StoreCounters((int) n);
    }

    @Override
    public List<IdleEntry> snapshotIdleEntries(String poolName) {
        List<String> order = call("list", () -> redis.lrange(key(poolName, "idle:order"), 0, -1));
        List<IdleEntry> out = new ArrayList<>();
        long now = nowMs();
        java.util.Set<String> seen = new java.util.HashSet<>();
        for (String id : order) {
            if (!seen.add(id)) {
                continue;
            }
            Double exp = call("score", () -> redis.zscore(key(poolName, "idle:expires"), id));
            if (exp != null && exp > now) {
                out.add(new IdleEntry(id, Instant.ofEpochMilli(exp.longValue())));
            }
        }
        return Collections.unmodifiableList(out);
    }

    @Override
    public Integer getMaxIdle(String poolName) {
        String v = call("get max idle", () -> redis.get(key(poolName, "max_idle")));
        return v == null ? null : Integer.valueOf(v);
    }

    @Override
    public void setMaxIdle(String poolName, int maxIdle) {
        if (maxIdle < 0) {
            throw new InvalidArgumentException("maxIdle must be >= 0");
        }
        rejectIfDestroyed(poolName);
        call("set max idle", () -> redis.set(key(poolName, "max_idle"), Integer.toString(maxIdle)));
    }

    @Override
    public void setIdleEntryTtl(String poolName, Duration idleTtl) {
        if (idleTtl == null || idleTtl.toMillis() <= 0) {
            throw new InvalidArgumentException("idleTtl must be positive");
        }
        rejectIfDestroyed(poolName);
        call("set idle ttl", () -> redis.set(key(poolName, "idle:ttl_ms"), Long.toString(idleTtl.toMillis())));
    }

    private PoolDestroyedException fenced(String poolName) {
        return new PoolDestroyedException("Pool namespace is " + getDestroyState(poolName) + ": poolName=" + poolName);
    }

    private void rejectIfDestroyed(String poolName) {
        if (getDestroyState(poolName) != PoolDestroyState.ACTIVE) {
            throw fenced(poolName);
        }
    }

    @Override
    public PoolDestroyState getDestroyState(String poolName) {
        String v = call("destroy state", () -> redis.get(key(poolName, "destroy")));
        return v == null ? PoolDestroyState.ACTIVE : PoolDestroyState.valueOf(v);
    }

    @Override
    public void beginDestroy(String poolName, String ownerId) {
        if (ownerId == null || ownerId.trim().isEmpty()) {
            throw new InvalidArgumentException("ownerId must not be blank");
        }
        Object r = call("begin destroy", () -> redis.eval(BEGIN_DESTROY, List.of(key(poolName, "destroy")),
                List.of(PoolDestroyState.DESTROYED.name())));
        if (!Long.valueOf(1).equals(r)) {
            throw new PoolDestroyedException("Pool namespace is already DESTROYED: poolName=" + poolName);
        }
    }

    @Override
    public void clearPoolState(String poolName) {
        call("clear", () -> redis.del(key(poolName, "idle:order"), key(poolName, "idle:expires"),
                key(poolName, "idle:ttl_ms"), key(poolName, "max_idle"), key(poolName, "primary")));
    }

    @Override
    public void markDestroyed(String poolName, String ownerId, Duration tombstoneTtl) {
        if (ownerId == null || ownerId.trim().isEmpty()) {
            throw new InvalidArgumentException("ownerId must not be blank");
        }
        if (tombstoneTtl != null && tombstoneTtl.toMillis() <= 0) {
            throw new InvalidArgumentException("tombstoneTtl must be positive");
        }
        String k = key(poolName, "destroy");
        String v = PoolDestroyState.DESTROYED.name();
        call("mark destroyed", () -> tombstoneTtl == null ? redis.set(k, v)
                : redis.set(k, v, new SetParams().px(tombstoneTtl.toMillis())));
    }
}
