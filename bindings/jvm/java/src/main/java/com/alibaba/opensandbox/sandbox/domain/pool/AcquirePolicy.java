// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.pool;

/**
 * What {@code SandboxPool.acquire} does with the idle buffer. {@code FAIL_FAST} and {@code DIRECT_CREATE}
 * try one idle candidate; the {@code RETRY_NEXT_IDLE*} policies try up to {@code maxAcquireRetries}. The
 * {@code *CREATE} policies then create a sandbox directly; the others throw {@code PoolEmptyException}
 * (nothing idle) or {@code PoolAcquireFailedException} (candidates unusable).
 */
public enum AcquirePolicy {
    FAIL_FAST,
    DIRECT_CREATE,
    RETRY_NEXT_IDLE,
    RETRY_NEXT_IDLE_THEN_CREATE;

    /** How many idle candidates one acquire may try. */
    public int maxIdleAttempts(int maxAcquireRetries) {
        return this == RETRY_NEXT_IDLE || this == RETRY_NEXT_IDLE_THEN_CREATE ? Math.max(1, maxAcquireRetries) : 1;
    }

    /** Whether the acquire creates a sandbox once its idle candidates are exhausted. */
    public boolean fallsThroughToDirectCreate() {
        return this == DIRECT_CREATE || this == RETRY_NEXT_IDLE_THEN_CREATE;
    }
}
