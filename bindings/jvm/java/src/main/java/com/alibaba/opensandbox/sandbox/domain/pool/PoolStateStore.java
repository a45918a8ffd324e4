// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.pool;

import java.time.Duration;
import java.time.Instant;
import java.util.Collections;
import java.util.List;

/**
 * Pool coordination state and idle membership, namespaced by pool name (same contract as the official
 * SDK): a take hands an id to one caller only, put/remove are idempotent, takes are best-effort FIFO.
 * Only the primary lock holder writes maintenance (putIdle, reap); every node may take and remove.
 */
public interface PoolStateStore {
    /** Atomically removes and returns one idle id (oldest first), or null. */
    String tryTakeIdle(String poolName);

    /** As {@link #tryTakeIdle(String)}, skipping (and reporting) alive entries with less than {@code minRemainingTtl} left. */
    default TakeIdleResult tryTakeIdle(String poolName, Duration minRemainingTtl) {
        return TakeIdleResult.of(tryTakeIdle(poolName));
    }

    void putIdle(String poolName, String sandboxId);

    void removeIdle(String poolName, String sandboxId);

    boolean tryAcquirePrimaryLock(String poolName, String ownerId, Duration ttl);

    boolean renewPrimaryLock(String poolName, String ownerId, Duration ttl);

    void releasePrimaryLock(String poolName, String ownerId);

    void reapExpiredIdle(String poolName, Instant now);

    /** Reaps expired entries and evicts those with less than {@code minRemainingTtl} left; returns the alive evicted ids. */
    default List<String> reapExpiredIdle(String poolName, Instant now, Duration minRemainingTtl) {
        reapExpiredIdle(poolName, now);
        return Collections.emptyList();
    }

    StoreCounters snapshotCounters(String poolName);

    List<IdleEntry> snapshotIdleEntries(String poolName);

    /** The shared max idle target, or null (then each node uses its own). */
    Integer getMaxIdle(String poolName);

    void setMaxIdle(String poolName, int maxIdle);

    default void setIdleEntryTtl(String poolName, Duration idleTtl) {
        // Stores without entry TTLs keep entries until taken or removed.
    }

    /** The namespace's shared destroy state; stores without destroy fencing are always ACTIVE. */
    default PoolDestroyState getDestroyState(String poolName) {
        return PoolDestroyState.ACTIVE;
    }

    /** Starts a FORCE destroy: writes the DESTROYING fence (throws {@code PoolDestroyedException} if DESTROYED). */
    default void beginDestroy(String poolName, String ownerId) {
        throw new UnsupportedOperationException("Pool destroy is not supported by this PoolStateStore");
    }

    /** Clears the pool's coordination data (idle set, lock, targets), keeping the destroy state. */
    default void clearPoolState(String poolName) {
        throw new UnsupportedOperationException("Pool destroy is not supported by this PoolStateStore");
    }

    /** Finishes a destroy: the DESTROYED tombstone, for {@code tombstoneTtl} (null: forever). */
    default void markDestroyed(String poolName, String ownerId, Duration tombstoneTtl) {
        throw new UnsupportedOperationException("Pool destroy is not supported by this PoolStateStore");
    }
}
