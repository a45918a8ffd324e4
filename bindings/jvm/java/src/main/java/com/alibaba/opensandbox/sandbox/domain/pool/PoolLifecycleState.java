// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.pool;

/** Lifecycle of one pool instance. */
public enum PoolLifecycleState {
    NOT_STARTED,
    STARTING,
    RUNNING,
    DRAINING,
    STOPPED
}
