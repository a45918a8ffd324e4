// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.pool;

/** Destroy fencing of a pool namespace in its store (this package's stores are always ACTIVE: no destroy yet). */
public enum PoolDestroyState {
    ACTIVE,
    DESTROYING,
    DESTROYED
}
