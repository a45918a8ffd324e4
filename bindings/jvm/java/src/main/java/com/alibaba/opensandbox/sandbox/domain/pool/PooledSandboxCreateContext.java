// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.pool;

import com.alibaba.opensandbox.sandbox.Sandbox;
import com.alibaba.opensandbox.sandbox.config.ConnectionConfig;
import java.time.Duration;
import java.util.function.Predicate;

/**
 * (1.1) What a {@link PooledSandboxCreator} gets when the pool needs a sandbox: the pool's
 * name and owner, the idle timeout to give the sandbox, why ({@link Reason#WARMUP} or
 * {@link Reason#DIRECT_CREATE}), the readiness settings of that path (warmup* or acquire*
 * options), and the connection configs ({@code createConnectionConfig} is the one for the
 * create request; this package uses the pool's config for both).
 */
public final class PooledSandboxCreateContext {
    /** Why the pool creates a sandbox. */
    public enum Reason {
        WARMUP,
        DIRECT_CREATE
    }

    private final String poolName;
    private final String ownerId;
    private final Duration idleTimeout;
    private final Reason reason;
    private final Duration readyTimeout;
    private final Duration healthCheckPollingInterval;
    private final boolean skipHealthCheck;
    private final Predicate<Sandbox> healthCheck;
    private final ConnectionConfig connectionConfig;
    private final ConnectionConfig createConnectionConfig;

    public PooledSandboxCreateContext(String poolName, String ownerId, Duration idleTimeout, Reason reason,
            Duration readyTimeout, Duration healthCheckPollingInterval, boolean skipHealthCheck,
            Predicate<Sandbox> healthCheck, ConnectionConfig connectionConfig, ConnectionConfig createConnectionConfig) {
        this.poolName = poolName;
        this.ownerId = ownerId;
        this.idleTimeout = idleTimeout;
        this.reason = reason;
        this.readyTimeout = readyTimeout;
        this.healthCheckPollingInterval = healthCheckPollingInterval;
        this.skipHealthCheck = skipHealthCheck;
        this.healthCheck = healthCheck;
        this.connectionConfig = connectionConfig;
        this.createConnectionConfig = createConnectionConfig != null ? createConnectionConfig : connectionConfig;
    }

    public String getPoolName() {
        return poolName;
    }

    public String getOwnerId() {
        return ownerId;
    }

    /** The pool's idle timeout: the lifetime to give the new sandbox. */
    public Duration getIdleTimeout() {
        return idleTimeout;
    }

    public Reason getReason() {
        return reason;
    }

    public Duration getReadyTimeout() {
        return readyTimeout;
    }

    public Duration getHealthCheckPollingInterval() {
        return healthCheckPollingInterval;
    }

    public boolean getSkipHealthCheck() {
        return skipHealthCheck;
    }

    /** The custom health check of this path, or null. */
    public Predicate<Sandbox> getHealthCheck() {
        return healthCheck;
    }

    /** For lifecycle calls (and the returned sandbox). */
    public ConnectionConfig getConnectionConfig() {
        return connectionConfig;
    }

    /** For the create request. */
    public ConnectionConfig getCreateConnectionConfig() {
        return createConnectionConfig;
    }

    @Override
    public String toString() {
        return "PooledSandboxCreateContext{poolName=" + poolName + ", ownerId=" + ownerId + ", reason=" + reason
                + ", idleTimeout=" + idleTimeout + ", readyTimeout=" + readyTimeout + "}";
    }
}
