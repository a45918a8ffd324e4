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
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.params.SetParams;

/**
 * A {@link PoolStateStore} in Redis, for pools shared by several processes, in the official SDKs' layout
 * (the same keys and scripts as this family's Python and Go stores, so pools of any of them can share a
 * namespace). Per pool, under {@code {keyPrefix}:{<base64url(poolName)>}:} (one Redis Cluster hash slot
 * per pool): {@code idle:list} (ids, oldest first), {@code idle:expires} (hash id to expiry in ms: the
 * membership), {@code lock} (the primary lock: owner id with a TTL), {@code maxIdle},
 * {@code idleTtlMillis}, and the destroy tombstone {@code destroy:state} / {@code destroy:owner}. Takes,
 * puts, reaps and lock changes are Lua scripts on Redis's own clock ({@code TIME}), so each is atomic and
 * instances with skewed clocks agree.
 *
 * <p>The caller creates, configures and closes the client, which must be safe for concurrent use
 * ({@code JedisPooled}). Redis failures surface as {@link PoolStateStoreUnavailableException}; a write to
 * a destroyed namespace as {@code PoolDestroyedException}.
 */
public final class RedisPoolStateStore implements PoolStateStore {
    public static final String DEFAULT_KEY_PREFIX = "opensandbox:pool";
    private static final Duration DEFAULT_IDLE_TTL = Duration.ofHours(24);

    private static final String NOW_MS = "local t = redis.call('TIME')\n"
            + "local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n";
    // KEYS: idle list, expiry hash. ARGV: minimum remaining TTL (ms). nil, or {id or '', {skipped alive ids}}.
    private static final String TAKE_IDLE = NOW_MS + String.join("\n",
            "local cutoff_ms = now_ms + (tonumber(ARGV[1]) or 0)",
            "local skipped = {}",
            "while true do",
            "  local id = redis.call('LPOP', KEYS[1])",
            "  if not id then",
            "    if #skipped == 0 then return nil end",
            "    return {'', skipped}",
            "  end",
            "  local exp = redis.call('HGET', KEYS[2], id)",
            "  if exp then",
            "    redis.call('HDEL', KEYS[2], id)",
            "    exp = tonumber(exp)",
            "    if exp > cutoff_ms then return {id, skipped} end",
            "    if exp > now_ms then table.insert(skipped, id) end",
            "  end",
            "end");
    // KEYS: idle list, expiry hash, destroy state. ARGV: id, idle TTL (ms). -1 fenced, 0 already idle, 1 added.
    private static final String PUT_IDLE = "if redis.call('GET', KEYS[3]) then return -1 end\n" + NOW_MS
            + String.join("\n",
            "local current = redis.call('HGET', KEYS[2], ARGV[1])",
            "if current and tonumber(current) > now_ms then return 0 end",
            "if not current then redis.call('RPUSH', KEYS[1], ARGV[1]) end",
            "redis.call('HSET', KEYS[2], ARGV[1], now_ms + tonumber(ARGV[2]))",
            "return 1");
    // KEYS: lock, destroy state. ARGV: owner, TTL (ms). Takes a free lock or extends our own.
    private static final String ACQUIRE_LOCK = String.join("\n",
            "if redis.call('GET', KEYS[2]) then return 0 end",
            "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end",
            "if redis.call('GET', KEYS[1]) == ARGV[1] then",
            "  redis.call('PEXPIRE', KEYS[1], ARGV[2])",
            "  return 1",
            "end",
            "return 0");
    // KEYS: lock, destroy state. ARGV: owner, TTL (ms). Extends only a lock we still hold.
    private static final String RENEW_LOCK = String.join("\n",
            "if redis.call('GET', KEYS[2]) then return 0 end",
            "if redis.call('GET', KEYS[1]) == ARGV[1] then",
            "  redis.call('PEXPIRE', KEYS[1], ARGV[2])",
            "  return 1",
            "end",
            "return 0");
    // KEYS: lock. ARGV: owner. Never deletes another owner's lock.
    private static final String RELEASE_LOCK =
            "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end\nreturn 0";
    // KEYS: idle list, expiry hash. ARGV: minimum remaining TTL (ms). Returns the evicted ids still alive.
    private static final String REAP_IDLE = NOW_MS + String.join("\n",
            "local cutoff_ms = now_ms + (tonumber(ARGV[1]) or 0)",
            "local alive = {}",
            "local entries = redis.call('HGETALL', KEYS[2])",
            "for i = 1, #entries, 2 do",
            "  local exp = tonumber(entries[i + 1])",
            "  if exp <= cutoff_ms then",
            "    redis.call('HDEL', KEYS[2], entries[i])",
            "    redis.call('LREM', KEYS[1], 0, entries[i])",
            "    if exp > now_ms then table.insert(alive, entries[i]) end",
            "  end",
            "end",
            "return alive");
    // KEYS: value key, destroy state. ARGV: value. -1 when fenced.
    private static final String SET_FENCED = String.join("\n",
            "if redis.call('GET', KEYS[2]) then return -1 end",
            "redis.call('SET', KEYS[1], ARGV[1])",
            "return 1");
    // KEYS: destroy state, destroy owner. ARGV: DESTROYING, DESTROYED, owner. -1 when already destroyed.
    private static final String BEGIN_DESTROY = String.join("\n",
            "if redis.call('GET', KEYS[1]) == ARGV[2] then return -1 end",
            "redis.call('SET', KEYS[1], ARGV[1])",
            "redis.call('SET', KEYS[2], ARGV[3])",
            "return 1");

    /** The keys of one pool. */
    private static final class Keys {
        final String idleList;
        final String idleExpires;
        final String lock;
        final String maxIdle;
        final String idleTtl;
        final String destroyState;
        final String destroyOwner;

        Keys(String prefix, String poolName) {
            if (poolName == null || poolName.trim().isEmpty()) {
                throw new InvalidArgumentException("poolName must not be blank");
            }
            String tag = Base64.getUrlEncoder().withoutPadding().encodeToString(poolName.getBytes(StandardCharsets.UTF_8));
            String base = prefix + ":{" + tag + "}:";
            idleList = base + "idle:list";
            idleExpires = base + "idle:expires";
            lock = base + "lock";
            maxIdle = base + "maxIdle";
            idleTtl = base + "idleTtlMillis";
            destroyState = base + "destroy:state";
            destroyOwner = base + "destroy:owner";
        }
    }

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

    /** A store under {@link #DEFAULT_KEY_PREFIX}. */
    public RedisPoolStateStore(UnifiedJedis redis) {
        this(redis, DEFAULT_KEY_PREFIX);
    }

    private Keys keys(String poolName) {
        return new Keys(keyPrefix, poolName);
    }

    private <T> T call(String operation, String poolName, Supplier<T> op) {
        try {
            return op.get();
        } catch (JedisException e) {
            throw new PoolStateStoreUnavailableException("Redis pool state store operation failed: operation=" + operation
                    + " poolName=" + poolName + ": " + e.getMessage(), e);
        }
    }

    private void fenced(String poolName, Object reply) {
        if (Long.valueOf(-1).equals(reply)) {
            throw new PoolDestroyedException("Pool namespace is " + getDestroyState(poolName) + ": poolName=" + poolName);
        }
    }

    private static long millis(Duration d) {
        return d == null ? 0 : Math.max(0, d.toMillis());
    }

    @Override
    public String tryTakeIdle(String poolName) {
        return tryTakeIdle(poolName, Duration.ZERO).getSandboxId();
    }

    @Override
    public TakeIdleResult tryTakeIdle(String poolName, Duration minRemainingTtl) {
        Keys k = keys(poolName);
        Object reply = call("tryTakeIdle", poolName, () -> redis.eval(TAKE_IDLE, List.of(k.idleList, k.idleExpires),
                List.of(Long.toString(millis(minRemainingTtl)))));
        if (!(reply instanceof List)) {
            return TakeIdleResult.of(null);
        }
        List<?> r = (List<?>) reply;
        String id = r.isEmpty() || r.get(0) == null ? "" : String.valueOf(r.get(0));
        List<String> skipped = new ArrayList<>();
        if (r.size() > 1 && r.get(1) instanceof List) {
            for (Object o : (List<?>) r.get(1)) {
                skipped.add(String.valueOf(o));
            }
        }
        return new TakeIdleResult(id.isEmpty() ? null : id, skipped);
    }

    @Override
    public void putIdle(String poolName, String sandboxId) {
        if (sandboxId == null || sandboxId.trim().isEmpty()) {
            throw new InvalidArgumentException("sandboxId must not be blank");
        }
        Keys k = keys(poolName);
        Long ttlMs = getLong("resolveIdleTtl", poolName, k.idleTtl);
        long ttl = Math.max(1, ttlMs == null ? DEFAULT_IDLE_TTL.toMillis() : ttlMs);
        Object reply = call("putIdle", poolName, () -> redis.eval(PUT_IDLE, List.of(k.idleList, k.idleExpires, k.destroyState),
                List.of(sandboxId, Long.toString(ttl))));
        fenced(poolName, reply);
    }

    @Override
    public void removeIdle(String poolName, String sandboxId) {
        Keys k = keys(poolName);
        call("removeIdle", poolName, () -> {
            redis.hdel(k.idleExpires, sandboxId);
            return redis.lrem(k.idleList, 0, sandboxId);
        });
    }

    private boolean lockScript(String operation, String script, String poolName, String ownerId, Duration ttl) {
        if (ownerId == null || ownerId.trim().isEmpty()) {
            throw new InvalidArgumentException("ownerId must not be blank");
        }
        if (ttl == null || ttl.toMillis() <= 0) {
            throw new InvalidArgumentException("ttl must be positive");
        }
        Keys k = keys(poolName);
        Object r = call(operation, poolName, () -> redis.eval(script, List.of(k.lock, k.destroyState),
                List.of(ownerId, Long.toString(ttl.toMillis()))));
        return Long.valueOf(1).equals(r);
    }

    @Override
    public boolean tryAcquirePrimaryLock(String poolName, String ownerId, Duration ttl) {
        return lockScript("tryAcquirePrimaryLock", ACQUIRE_LOCK, poolName, ownerId, ttl);
    }

    @Override
    public boolean renewPrimaryLock(String poolName, String ownerId, Duration ttl) {
        return lockScript("renewPrimaryLock", RENEW_LOCK, poolName, ownerId, ttl);
    }

    @Override
    public void releasePrimaryLock(String poolName, String ownerId) {
        Keys k = keys(poolName);
        call("releasePrimaryLock", poolName, () -> redis.eval(RELEASE_LOCK, List.of(k.lock), List.of(String.valueOf(ownerId))));
    }

    @Override
    public void reapExpiredIdle(String poolName, Instant now) {
        reapExpiredIdle(poolName, now, Duration.ZERO);
    }

    /** Reaps on Redis's clock ({@code now} is not used: every instance agrees on one clock). */
    @Override
    public List<String> reapExpiredIdle(String poolName, Instant now, Duration minRemainingTtl) {
        Keys k = keys(poolName);
        Object reply = call("reapExpiredIdle", poolName, () -> redis.eval(REAP_IDLE, List.of(k.idleList, k.idleExpires),
                List.of(Long.toString(millis(minRemainingTtl)))));
        List<String> out = new ArrayList<>();
        if (reply instanceof List) {
            for (Object o : (List<?>) reply) {
                out.add(String.valueOf(o));
            }
        }
        return out;
    }

    @Override
    public StoreCounters snapshotCounters(String poolName) {
        Keys k = keys(poolName);
        return new StoreCounters((int) (long) call("snapshotCounters", poolName, () -> redis.hlen(k.idleExpires)));
    }

    @Override
    public List<IdleEntry> snapshotIdleEntries(String poolName) {
        Keys k = keys(poolName);
        List<String> ids = call("snapshotIdleEntries", poolName, () -> redis.lrange(k.idleList, 0, -1));
        Map<String, String> expires = call("snapshotIdleEntries", poolName, () -> redis.hgetAll(k.idleExpires));
        List<IdleEntry> out = new ArrayList<>();
        for (String id : ids) {
            String exp = expires.get(id);
            if (exp != null) {
                out.add(new IdleEntry(id, Instant.ofEpochMilli(Long.parseLong(exp))));
            }
        }
        return Collections.unmodifiableList(out);
    }

    private Long getLong(String operation, String poolName, String key) {
        String v = call(operation, poolName, () -> redis.get(key));
        if (v == null) {
            return null;
        }
        try {
            return Long.valueOf(v);
        } catch (NumberFormatException e) {
            return null; // a foreign value under our key: treat as unset
        }
    }

    @Override
    public Integer getMaxIdle(String poolName) {
        Long v = getLong("getMaxIdle", poolName, keys(poolName).maxIdle);
        return v == null ? null : v.intValue();
    }

    private void setFenced(String operation, String poolName, String key, long value) {
        Keys k = keys(poolName);
        fenced(poolName, call(operation, poolName, () -> redis.eval(SET_FENCED, List.of(key, k.destroyState),
                List.of(Long.toString(value)))));
    }

    @Override
    public void setMaxIdle(String poolName, int maxIdle) {
        if (maxIdle < 0) {
            throw new InvalidArgumentException("maxIdle must be >= 0");
        }
        setFenced("setMaxIdle", poolName, keys(poolName).maxIdle, maxIdle);
    }

    @Override
    public void setIdleEntryTtl(String poolName, Duration idleTtl) {
        if (idleTtl == null || idleTtl.toMillis() <= 0) {
            throw new InvalidArgumentException("idleTtl must be positive");
        }
        setFenced("setIdleEntryTtl", poolName, keys(poolName).idleTtl, idleTtl.toMillis());
    }

    @Override
    public PoolDestroyState getDestroyState(String poolName) {
        Keys k = keys(poolName);
        String v = call("getDestroyState", poolName, () -> redis.get(k.destroyState));
        if (PoolDestroyState.DESTROYING.name().equals(v)) {
            return PoolDestroyState.DESTROYING;
        }
        if (PoolDestroyState.DESTROYED.name().equals(v)) {
            return PoolDestroyState.DESTROYED;
        }
        return PoolDestroyState.ACTIVE;
    }

    @Override
    public void beginDestroy(String poolName, String ownerId) {
        if (ownerId == null || ownerId.trim().isEmpty()) {
            throw new InvalidArgumentException("ownerId must not be blank");
        }
        Keys k = keys(poolName);
        Object r = call("beginDestroy", poolName, () -> redis.eval(BEGIN_DESTROY, List.of(k.destroyState, k.destroyOwner),
                List.of(PoolDestroyState.DESTROYING.name(), PoolDestroyState.DESTROYED.name(), ownerId)));
        if (Long.valueOf(-1).equals(r)) {
            throw new PoolDestroyedException("Pool namespace is already DESTROYED: poolName=" + poolName);
        }
    }

    @Override
    public void clearPoolState(String poolName) {
        Keys k = keys(poolName);
        call("clearPoolState", poolName, () -> redis.del(k.idleList, k.idleExpires, k.lock, k.maxIdle, k.idleTtl));
    }

    @Override
    public void markDestroyed(String poolName, String ownerId, Duration tombstoneTtl) {
        if (ownerId == null || ownerId.trim().isEmpty()) {
            throw new InvalidArgumentException("ownerId must not be blank");
        }
        if (tombstoneTtl != null && tombstoneTtl.toMillis() <= 0) {
            throw new InvalidArgumentException("tombstoneTtl must be positive");
        }
        Keys k = keys(poolName);
        call("markDestroyed", poolName, () -> {
            if (tombstoneTtl == null) {
                redis.set(k.destroyState, PoolDestroyState.DESTROYED.name());
                return redis.set(k.destroyOwner, ownerId);
            }
            long px = Math.max(1, tombstoneTtl.toMillis());
            redis.set(k.destroyState, PoolDestroyState.DESTROYED.name(), new SetParams().px(px));
            return redis.set(k.destroyOwner, ownerId, new SetParams().px(px));
        });
    }
}
