// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.pool;

/** Counters of a pool in its state store. */
public final class StoreCounters {
    private final int idleCount;

    public StoreCounters(int idleCount) {
        this.idleCount = idleCount;
    }

    public int getIdleCount() {
        return idleCount;
    }
}
