// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.pool;

/** Destroy state of a pool namespace, shared by every instance through the store. */
public enum PoolDestroyState {
    ACTIVE,
    DESTROYING,
    DESTROYED
}
