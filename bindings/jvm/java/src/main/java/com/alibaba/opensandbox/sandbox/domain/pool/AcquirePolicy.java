// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.pool;

/** What {@code SandboxPool.acquire} does when no idle sandbox is usable. */
public enum AcquirePolicy {
    /** Throw {@code PoolEmptyException} (no idle) or {@code PoolAcquireFailedException} (idle ones unusable). */
    FAIL_FAST,
    /** Create a sandbox directly from the pool's creation spec. */
    DIRECT_CREATE
}
