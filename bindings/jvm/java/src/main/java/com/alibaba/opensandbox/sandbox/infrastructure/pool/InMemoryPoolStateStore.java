// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.infrastructure.pool;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.PoolDestroyedException;
import com.alibaba.opensandbox.sandbox.domain.pool.IdleEntry;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolDestroyState;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolStateStore;
import com.alibaba.opensandbox.sandbox.domain.pool.StoreCounters;
import com.alibaba.opensandbox.sandbox.domain.pool.TakeIdleResult;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A single-process {@link PoolStateStore} (thread-safe): idle ids in FIFO order with per-entry expiry
 * (the pool's idle timeout, default 24 h), the primary lock with owner and TTL, and the max idle target.
 */
public final class InMemoryPoolStateStore implements PoolStateStore {
    private static final Duration DEFAULT_IDLE_TTL = Duration.ofHours(24);

    private static final class Pool {
        /** Hand-out order; {@code expires} is the membership (ids not in it are skipped). */
        final Deque<String> queue = new ArrayDeque<>();
        final Map<String, Instant> expires = new HashMap<>();
        Duration idleTtl = DEFAULT_IDLE_TTL;
        Integer maxIdle;
        String lockOwner;
        Instant lockExpires;
    }

    private static final class Tombstone {
        final PoolDestroyState state;
        final Instant expiresAt;

        Tombstone(PoolDestroyState state, Instant expiresAt) {
            this.state = state;
            this.expiresAt = expiresAt;
        }
    }

    private final Map<String, Pool> pools = new HashMap<>();
    private final Map<String, Tombstone> tombstones = new HashMap<>();

    private void rejectIfDestroyed(String poolName) {
        PoolDestroyState st = getDestroyState(poolName);
        if (st != PoolDestroyState.ACTIVE) {
            throw new PoolDestroyedException("Pool namespace is " + st + ": poolName=" + poolName);
        }
    }

    private static void requireName(String poolName) {
        if (poolName == null || poolName.trim().isEmpty()) {
            throw new InvalidArgumentException("poolName must not be blank");
        }
    }

    private Pool pool(String poolName) {
        requireName(poolName);
        return pools.computeIfAbsent(poolName, k -> new Pool());
    }

    @Override
    public synchronized String tryTakeIdle(String poolName) {
        return tryTakeIdle(poolName, Duration.ZERO).getSandboxId();
    }

    @Override
    public synchronized TakeIdleResult tryTakeIdle(String poolName, Duration minRemainingTtl) {
        Pool p = pool(poolName);
        Instant now = Instant.now();
        Instant cutoff = now.plus(minRemainingTtl == null ? Duration.ZERO : minRemainingTtl);
        List<String> discarded = new ArrayList<>();
        while (!p.queue.isEmpty()) {
            String id = p.queue.pollFirst();
            Instant exp = p.expires.remove(id);
            if (exp == null) {
                continue;
            }
            if (exp.isAfter(cutoff)) {
                return new TakeIdleResult(id, discarded);
            }
            if (exp.isAfter(now)) {
                discarded.add(id);
            }
        }
        return new TakeIdleResult(null, discarded);
    }

    @Override
    public synchronized void putIdle(String poolName, String sandboxId) {
        if (sandboxId == null || sandboxId.trim().isEmpty()) {
            throw new InvalidArgumentException("sandboxId must not be blank");
        }
        rejectIfDestroyed(poolName);
        Pool p = pool(poolName);
        Instant now = Instant.now();
        Instant current = p.expires.get(sandboxId);
        if (current != null && current.isAfter(now)) {
            return; // already idle: one id is handed out once
        }
        if (current == null) {
            p.queue.addLast(sandboxId);
        }
        p.expires.put(sandboxId, now.plus(p.idleTtl));
    }

    @Override
    public synchronized void removeIdle(String poolName, String sandboxId) {
        Pool p = pool(poolName);
        if (p.expires.remove(sandboxId) != null) {
            p.queue.remove(sandboxId); // a later put queues it last again
        }
    }

    @Override
    public synchronized boolean tryAcquirePrimaryLock(String poolName, String ownerId, Duration ttl) {
        return lock(poolName, ownerId, ttl, false);
    }

    @Override
    public synchronized boolean renewPrimaryLock(String poolName, String ownerId, Duration ttl) {
        return lock(poolName, ownerId, ttl, true);
    }

    private boolean lock(String poolName, String ownerId, Duration ttl, boolean renewOnly) {
        if (ownerId == null || ownerId.trim().isEmpty()) {
            throw new InvalidArgumentException("ownerId must not be blank");
        }
        if (ttl == null || ttl.isZero() || ttl.isNegative()) {
            throw new InvalidArgumentException("ttl must be positive");
        }
        if (getDestroyState(poolName) != PoolDestroyState.ACTIVE) {
            return false;
        }
        Pool p = pool(poolName);
        Instant now = Instant.now();
        boolean live = p.lockOwner != null && p.lockExpires.isAfter(now);
        if (live && !p.lockOwner.equals(ownerId)) {
            return false;
        }
        if (renewOnly && !(live && p.lockOwner.equals(ownerId))) {
            return false;
        }
        p.lockOwner = ownerId;
        p.lockExpires = now.plus(ttl);
        return true;
    }

    @Override
    public synchronized void releasePrimaryLock(String poolName, String ownerId) {
        Pool p = pool(poolName);
        if (ownerId != null && ownerId.equals(p.lockOwner)) {
            p.lockOwner = null;
            p.lockExpires = null;
        }
    }

    @Override
    public synchronized void reapExpiredIdle(String poolName, Instant now) {
        reapExpiredIdle(poolName, now, Duration.ZERO);
    }

    @Override
    public synchronized List<String> reapExpiredIdle(String poolName, Instant now, Duration minRemainingTtl) {
        Pool p = pool(poolName);
        Instant cutoff = now.plus(minRemainingTtl == null ? Duration.ZERO : minRemainingTtl);
        List<String> discarded = new ArrayList<>();
        p.expires.entrySet().removeIf(e -> {
            if (e.getValue().isAfter(cutoff)) {
                return false;
            }
            if (e.getValue().isAfter(now)) {
                discarded.add(e.getKey());
            }
            return true;
        });
        p.queue.removeIf(id -> !p.expires.containsKey(id));
        return discarded;
    }

    @Override
    public synchronized StoreCounters snapshotCounters(String poolName) {
        return new StoreCounters(snapshotIdleEntries(poolName).size());
    }

    @Override
    public synchronized List<IdleEntry> snapshotIdleEntries(String poolName) {
        Pool p = pool(poolName);
        reapExpiredIdle(poolName, Instant.now(), Duration.ZERO);
        List<IdleEntry> out = new ArrayList<>();
        for (String id : p.queue) {
            Instant exp = p.expires.get(id);
            if (exp != null) {
                out.add(new IdleEntry(id, exp));
            }
        }
        return out;
    }

    @Override
    public synchronized Integer getMaxIdle(String poolName) {
        return pool(poolName).maxIdle;
    }

    @Override
    public synchronized void setMaxIdle(String poolName, int maxIdle) {
        if (maxIdle < 0) {
            throw new InvalidArgumentException("maxIdle must be >= 0");
        }
        rejectIfDestroyed(poolName);
        pool(poolName).maxIdle = maxIdle;
    }

    @Override
    public synchronized void setIdleEntryTtl(String poolName, Duration idleTtl) {
        if (idleTtl == null || idleTtl.isZero() || idleTtl.isNegative()) {
            throw new InvalidArgumentException("idleTtl must be positive");
        }
        rejectIfDestroyed(poolName);
        pool(poolName).idleTtl = idleTtl;
    }

    @Override
    public synchronized PoolDestroyState getDestroyState(String poolName) {
        requireName(poolName);
        Tombstone t = tombstones.get(poolName);
        if (t == null) {
            return PoolDestroyState.ACTIVE;
        }
        if (t.expiresAt != null && !t.expiresAt.isAfter(Instant.now())) {
            tombstones.remove(poolName); // the tombstone lapsed: the name is free again
            return PoolDestroyState.ACTIVE;
        }
        return t.state;
    }

    @Override
    public synchronized void beginDestroy(String poolName, String ownerId) {
        if (ownerId == null || ownerId.trim().isEmpty()) {
            throw new InvalidArgumentException("ownerId must not be blank");
        }
        if (getDestroyState(poolName) == PoolDestroyState.DESTROYED) {
            throw new PoolDestroyedException("Pool namespace is already DESTROYED: poolName=" + poolName);
        }
        tombstones.put(poolName, new Tombstone(PoolDestroyState.DESTROYING, null));
    }

    @Override
    public synchronized void clearPoolState(String poolName) {
        requireName(poolName);
        pools.remove(poolName);
    }

    @Override
    public synchronized void markDestroyed(String poolName, String ownerId, Duration tombstoneTtl) {
        requireName(poolName);
        if (ownerId == null || ownerId.trim().isEmpty()) {
            throw new InvalidArgumentException("ownerId must not be blank");
        }
        if (tombstoneTtl != null && (tombstoneTtl.isZero() || tombstoneTtl.isNegative())) {
            throw new InvalidArgumentException("tombstoneTtl must be positive");
        }
        tombstones.put(poolName, new Tombstone(PoolDestroyState.DESTROYED,
                tombstoneTtl == null ? null : Instant.now().plus(tombstoneTtl)));
    }
}
