// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.pool;

/** Point-in-time state of a pool (same fields as the official SDK). */
public final class PoolSnapshot {
    private final PoolState state;
    private final PoolLifecycleState lifecycleState;
    private final int idleCount;
    private final int maxIdle;
    private final int failureCount;
    private final boolean backoffActive;
    private final String lastError;
    private final int inFlightOperations;

    public PoolSnapshot(PoolState state, PoolLifecycleState lifecycleState, int idleCount, int maxIdle, int failureCount,
            boolean backoffActive, String lastError, int inFlightOperations) {
        this.state = state;
        this.lifecycleState = lifecycleState;
        this.idleCount = idleCount;
        this.maxIdle = maxIdle;
        this.failureCount = failureCount;
        this.backoffActive = backoffActive;
        this.lastError = lastError;
        this.inFlightOperations = inFlightOperations;
    }

    public PoolState getState() {
        return state;
    }

    public PoolLifecycleState getLifecycleState() {
        return lifecycleState;
    }

    public int getIdleCount() {
        return idleCount;
    }

    public int getMaxIdle() {
        return maxIdle;
    }

    public int getFailureCount() {
        return failureCount;
    }

    /** Always false: fixed create admission replaced replenish backoff (as officially). */
    public boolean getBackoffActive() {
        return backoffActive;
    }

    public String getLastError() {
        return lastError;
    }

    public int getInFlightOperations() {
        return inFlightOperations;
    }

    @Override
    public String toString() {
        return "PoolSnapshot(state=" + state + ", lifecycleState=" + lifecycleState + ", idleCount=" + idleCount
                + ", maxIdle=" + maxIdle + ", failureCount=" + failureCount + ", lastError=" + lastError
                + ", inFlightOperations=" + inFlightOperations + ")";
    }
}
