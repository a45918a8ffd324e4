// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.pool;

/** Outcome of a completed destroy (a name already destroyed gives zero counts and no clear). */
public final class PoolDestroyResult {
    private final String poolName;
    private final PoolDestroyState state;
    private final int drainedIdleCount;
    private final int killedIdleCount;
    private final boolean persistentStateCleared;

    public PoolDestroyResult(String poolName, PoolDestroyState state, int drainedIdleCount, int killedIdleCount,
            boolean persistentStateCleared) {
        this.poolName = poolName;
        this.state = state;
        this.drainedIdleCount = drainedIdleCount;
        this.killedIdleCount = killedIdleCount;
        this.persistentStateCleared = persistentStateCleared;
    }

    public String getPoolName() {
        return poolName;
    }

    public PoolDestroyState getState() {
        return state;
    }

    public int getDrainedIdleCount() {
        return drainedIdleCount;
    }

    public int getKilledIdleCount() {
        return killedIdleCount;
    }

    public boolean getPersistentStateCleared() {
        return persistentStateCleared;
    }
}
