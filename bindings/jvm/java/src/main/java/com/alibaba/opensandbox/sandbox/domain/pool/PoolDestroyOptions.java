// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.pool;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import java.time.Duration;

/**
 * Options of {@code SandboxPoolManager.destroy}: the tombstone keeps the name destroyed for
 * {@code tombstoneTtl} (null: forever; default 7 days); {@code drainTimeout} bounds killing idle sandboxes
 * (default 30 s; zero: no bound).
 */
public final class PoolDestroyOptions {
    private final PoolDestroyStrategy strategy;
    private final Duration tombstoneTtl;
    private final Duration drainTimeout;

    public PoolDestroyOptions(PoolDestroyStrategy strategy, Duration tombstoneTtl, Duration drainTimeout) {
        if (tombstoneTtl != null && (tombstoneTtl.isZero() || tombstoneTtl.isNegative())) {
            throw new InvalidArgumentException("tombstoneTtl must be positive when set");
        }
        if (drainTimeout == null || drainTimeout.isNegative()) {
            throw new InvalidArgumentException("drainTimeout must be non-negative");
        }
        this.strategy = strategy == null ? PoolDestroyStrategy.FORCE : strategy;
        this.tombstoneTtl = tombstoneTtl;
        this.drainTimeout = drainTimeout;
    }

    public PoolDestroyOptions() {
        this(PoolDestroyStrategy.FORCE, Duration.ofDays(7), Duration.ofSeconds(30));
    }

    public PoolDestroyStrategy getStrategy() {
        return strategy;
    }

    public Duration getTombstoneTtl() {
        return tombstoneTtl;
    }

    public Duration getDrainTimeout() {
        return drainTimeout;
    }
}
