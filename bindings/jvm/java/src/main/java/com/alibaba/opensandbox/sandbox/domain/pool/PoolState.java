// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.pool;

/** Health of a pool as {@code snapshot()} reports it. */
public enum PoolState {
    HEALTHY,
    DEGRADED,
    DRAINING,
    STOPPED
}
