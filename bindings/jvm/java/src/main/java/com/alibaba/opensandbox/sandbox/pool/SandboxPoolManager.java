// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.pool;

import com.alibaba.opensandbox.sandbox.SandboxManager;
import com.alibaba.opensandbox.sandbox.config.ConnectionConfig;
import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.PoolDestroyIncompleteException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.PoolDestroyedException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxException;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolDestroyOptions;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolDestroyResult;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolDestroyState;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolDestroyStrategy;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolStateStore;
import java.time.Instant;
import java.util.UUID;
import java.util.logging.Logger;

/**
 * Operations on a pool namespace (its shared state in the store), without a running pool:
 * {@link #destroy} fences the name (every instance stops warming and acquiring), kills the idle
 * sandboxes, clears the shared state and leaves a tombstone. Sandboxes already handed out are not touched.
 */
public final class SandboxPoolManager {
    private static final Logger LOG = Logger.getLogger(SandboxPoolManager.class.getName());

    private final PoolStateStore stateStore;
    private final ConnectionConfig connectionConfig;
    private final String ownerId;

    public SandboxPoolManager(PoolStateStore stateStore, ConnectionConfig connectionConfig, String ownerId) {
        if (stateStore == null) {
            throw new InvalidArgumentException("stateStore is required");
        }
        if (connectionConfig == null) {
            throw new InvalidArgumentException("connectionConfig is required");
        }
        if (ownerId == null || ownerId.trim().isEmpty()) {
            throw new InvalidArgumentException("ownerId must not be blank");
        }
        this.stateStore = stateStore;
        this.connectionConfig = connectionConfig;
        this.ownerId = ownerId;
    }

    public SandboxPoolManager(PoolStateStore stateStore, ConnectionConfig connectionConfig) {
        this(stateStore, connectionConfig, "pool-manager-" + UUID.randomUUID());
    }

    public static Builder builder() {
        return new Builder();
    }

    public PoolDestroyResult destroy(String poolName) {
        return destroy(poolName, new PoolDestroyOptions());
    }

    /**
     * Destroys {@code poolName} (idempotent: a destroyed name gives DESTROYED with zero counts). Throws
     * {@link PoolDestroyIncompleteException} when the drain exceeds {@code drainTimeout} or the store fails
     * midway; the name stays DESTROYING and calling again resumes.
     */
    public PoolDestroyResult destroy(String poolName, PoolDestroyOptions options) {
        if (poolName == null || poolName.trim().isEmpty()) {
            throw new InvalidArgumentException("poolName must not be blank");
        }
        if (options.getStrategy() != PoolDestroyStrategy.FORCE) {
            throw new InvalidArgumentException("Only FORCE destroy is supported in this version");
        }
        if (stateStore.getDestroyState(poolName) == PoolDestroyState.DESTROYED) {
            return destroyed(poolName);
        }
        try {
            stateStore.beginDestroy(poolName, ownerId);
        } catch (PoolDestroyedException e) {
            return destroyed(poolName);
        }
        int drained = 0;
        int killed = 0;
        Instant deadline = Instant.now().plus(options.getDrainTimeout());
        try (SandboxManager manager = SandboxManager.builder().connectionConfig(connectionConfig).build()) {
            String id;
            while ((id = stateStore.tryTakeIdle(poolName)) != null) {
                drained++;
                try {
                    manager.killSandbox(id);
                    killed++;
                } catch (SandboxException e) {
                    LOG.warning("pool destroy " + poolName + ": killing idle sandbox " + id + " failed: " + e.getMessage());
                }
                if (!options.getDrainTimeout().isZero() && Instant.now().isAfter(deadline)) {
                    throw new PoolDestroyIncompleteException("Pool destroy drain timeout reached: poolName=" + poolName
                            + " drainedIdleCount=" + drained);
                }
            }
        }
        try {
            stateStore.clearPoolState(poolName);
        } catch (RuntimeException e) {
            throw new PoolDestroyIncompleteException("Pool destroy failed to clear persistent state: poolName=" + poolName, e);
        }
        try {
            stateStore.markDestroyed(poolName, ownerId, options.getTombstoneTtl());
        } catch (RuntimeException e) {
            throw new PoolDestroyIncompleteException("Pool destroy failed to write destroyed tombstone: poolName=" + poolName, e);
        }
        return new PoolDestroyResult(poolName, PoolDestroyState.DESTROYED, drained, killed, true);
    }

    private static PoolDestroyResult destroyed(String poolName) {
        return new PoolDestroyResult(poolName, PoolDestroyState.DESTROYED, 0, 0, false);
    }

    public static final class Builder {
        private PoolStateStore stateStore;
        private ConnectionConfig connectionConfig;
        private String ownerId;

        public Builder stateStore(PoolStateStore stateStore) {
            this.stateStore = stateStore;
            return this;
        }

        public Builder connectionConfig(ConnectionConfig connectionConfig) {
            this.connectionConfig = connectionConfig;
            return this;
        }

        public Builder ownerId(String ownerId) {
            this.ownerId = ownerId;
            return this;
        }

        public SandboxPoolManager build() {
            return ownerId == null ? new SandboxPoolManager(stateStore, connectionConfig)
                    : new SandboxPoolManager(stateStore, connectionConfig, ownerId);
        }
    }
}
