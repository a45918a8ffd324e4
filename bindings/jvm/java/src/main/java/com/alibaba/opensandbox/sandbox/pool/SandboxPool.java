// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.pool;

import com.alibaba.opensandbox.sandbox.Sandbox;
import com.alibaba.opensandbox.sandbox.SandboxManager;
import com.alibaba.opensandbox.sandbox.config.ConnectionConfig;
import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.PoolAcquireFailedException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.PoolDestroyedException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.PoolEmptyException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.PoolNotRunningException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.PoolStateStoreUnavailableException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxApiException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxInternalException;
import com.alibaba.opensandbox.sandbox.domain.pool.AcquirePolicy;
import com.alibaba.opensandbox.sandbox.domain.pool.IdleEntry;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolCreationSpec;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolDestroyState;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolLifecycleState;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolSnapshot;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolState;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolStateStore;
import com.alibaba.opensandbox.sandbox.domain.pool.PooledSandboxCreateContext;
import com.alibaba.opensandbox.sandbox.domain.pool.PooledSandboxCreator;
import com.alibaba.opensandbox.sandbox.domain.pool.SandboxPreparer;
import com.alibaba.opensandbox.sandbox.domain.pool.TakeIdleResult;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * A client-side warm pool of sandboxes (same builder, methods and semantics as the official SDK and
 * this family's Python pool). One instance per process holds the pool's primary lock in the
 * {@link PoolStateStore} and keeps {@code maxIdle} ready sandboxes (warmup: create, readiness, optional
 * {@link SandboxPreparer}, then the id goes to the store). Every instance can {@link #acquire}: take an
 * idle id (one taker per id), connect and check it, renew it to the caller's timeout; an unusable
 * candidate is killed and the next one is tried, then (by {@link AcquirePolicy}) a sandbox is created
 * directly or the acquire fails. The caller owns (and kills) what {@code acquire} returns.
 */
public final class SandboxPool implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(SandboxPool.class.getName());

    private final Builder config;
    private final PoolStateStore store;
    private final String ownerId;
    private final Object lifecycleLock = new Object();
    private final AtomicInteger inFlight = new AtomicInteger();
    private final AtomicInteger warming = new AtomicInteger();
    private volatile PoolLifecycleState lifecycle = PoolLifecycleState.NOT_STARTED;
    private volatile int currentMaxIdle;
    private volatile boolean primary;
    /** Bumped by start and shutdown: a warmup of an older run does not commit. */
    private volatile int generation;
    private int failureCount;
    private String lastError;
    private ScheduledExecutorService scheduler;
    private ExecutorService workers;
    private SandboxManager manager;

    private SandboxPool(Builder b) {
        this.config = b;
        this.store = b.stateStore;
        this.ownerId = b.ownerId != null ? b.ownerId : "pool-owner-" + UUID.randomUUID();
        this.currentMaxIdle = b.maxIdle;
    }

    public static Builder builder() {
        return new Builder();
    }

    public String getPoolName() {
        return config.poolName;
    }

    public String getOwnerId() {
        return ownerId;
    }

    private static ThreadFactory daemon(String name) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, name + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }

    // ---- lifecycle ----

    /** Starts warming and reconciling (idempotent). */
    public void start() {
        synchronized (lifecycleLock) {
            if (lifecycle == PoolLifecycleState.RUNNING) {
                return;
            }
            if (lifecycle == PoolLifecycleState.DRAINING) {
                throw new PoolNotRunningException("Cannot start while the pool is draining");
            }
            lifecycle = PoolLifecycleState.STARTING;
            try {
                requireActiveNamespace();
                manager = SandboxManager.builder().connectionConfig(config.connectionConfig).build();
                store.setIdleEntryTtl(config.poolName, config.idleTimeout);
                store.setMaxIdle(config.poolName, currentMaxIdle);
            } catch (RuntimeException e) {
                closeManager();
                lifecycle = PoolLifecycleState.STOPPED;
                throw e;
            }
            generation++;
            primary = false;
            synchronized (this) {
                failureCount = 0;
                lastError = null;
            }
            workers = Executors.newCachedThreadPool(daemon("sandbox-pool-" + config.poolName + "-worker"));
            scheduler = Executors.newSingleThreadScheduledExecutor(daemon("sandbox-pool-" + config.poolName + "-reconcile"));
            lifecycle = PoolLifecycleState.RUNNING;
            long every = Math.max(1, config.reconcileInterval.toMillis());
            // The lock heartbeat runs on its own, at most every primaryLockTtl / 3, so that a long
            // reconcile interval never lets the lock lapse (warmups run on the workers).
            long beat = Math.max(1, Math.min(every, config.primaryLockTtl.toMillis() / 3));
            scheduler.scheduleWithFixedDelay(this::heartbeatSafely, beat, beat, TimeUnit.MILLISECONDS);
            scheduler.scheduleWithFixedDelay(this::reconcileSafely, 0, every, TimeUnit.MILLISECONDS);
        }
    }

    /**
     * Stops reconciling and releases the primary lock. {@code graceful} waits up to {@code drainTimeout}
     * for in-flight acquires and warmups. Idle sandboxes stay in the store for other instances
     * ({@link #releaseAllIdle()} kills them).
     */
    public void shutdown(boolean graceful) {
        ScheduledExecutorService sched;
        synchronized (lifecycleLock) {
            if (lifecycle == PoolLifecycleState.NOT_STARTED || lifecycle == PoolLifecycleState.STOPPED) {
                lifecycle = PoolLifecycleState.STOPPED;
                return;
            }
            lifecycle = PoolLifecycleState.DRAINING;
            sched = scheduler;
        }
        sched.shutdownNow();
        if (graceful) {
            long deadline = System.nanoTime() + config.drainTimeout.toNanos();
            while ((inFlight.get() > 0 || warming.get() > 0) && System.nanoTime() < deadline) {
                try {
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            if (inFlight.get() > 0 || warming.get() > 0) {
                LOG.warning("pool " + config.poolName + ": shutdown gave up waiting for " + inFlight.get()
                        + " acquire(s) and " + warming.get() + " warmup(s) after " + config.drainTimeout);
            }
        }
        synchronized (lifecycleLock) {
            generation++;
            try {
                store.releasePrimaryLock(config.poolName, ownerId);
            } catch (RuntimeException e) {
                LOG.log(Level.WARNING, "pool " + config.poolName + ": releasing the primary lock failed", e);
            }
            primary = false;
            workers.shutdown();
            closeManager();
            lifecycle = PoolLifecycleState.STOPPED;
        }
    }

    /** {@code shutdown(true)}. */
    @Override
    public void close() {
        shutdown(true);
    }

    private void closeManager() {
        if (manager != null) {
            manager.close();
            manager = null;
        }
    }

    /** Throws {@link PoolDestroyedException} when the namespace is being (or was) destroyed. */
    private void requireActiveNamespace() {
        PoolDestroyState st = store.getDestroyState(config.poolName);
        if (st != PoolDestroyState.ACTIVE) {
            throw new PoolDestroyedException("Pool namespace is " + st + ": poolName=" + config.poolName);
        }
    }

    // ---- acquire ----

    public Sandbox acquire() {
        return acquire(null, AcquirePolicy.DIRECT_CREATE);
    }

    public Sandbox acquire(Duration sandboxTimeout) {
        return acquire(sandboxTimeout, AcquirePolicy.DIRECT_CREATE);
    }

    /**
     * A ready sandbox: an idle one, else (by {@code policy}) a new one. {@code sandboxTimeout} (when set)
     * renews it for the caller.
     */
    public Sandbox acquire(Duration sandboxTimeout, AcquirePolicy policy) {
        if (policy == null) {
            throw new InvalidArgumentException("policy must not be null");
        }
        if (lifecycle != PoolLifecycleState.RUNNING) {
            throw new PoolNotRunningException("Cannot acquire when pool state is " + lifecycle);
        }
        inFlight.incrementAndGet();
        try {
            // A destroyed namespace neither hands out nor creates (no direct-create fallback).
            requireActiveNamespace();
            return doAcquire(sandboxTimeout, policy);
        } finally {
            inFlight.decrementAndGet();
        }
    }

    private Sandbox doAcquire(Duration sandboxTimeout, AcquirePolicy policy) {
        Duration minTtl = config.acquireMinRemainingTtl;
        int attempts = policy.maxIdleAttempts(config.maxAcquireRetries);
        int tried = 0;
        String lastId = null;
        RuntimeException lastFailure = null;
        while (tried < attempts) {
            TakeIdleResult taken;
            try {
                taken = store.tryTakeIdle(config.poolName, minTtl);
            } catch (PoolStateStoreUnavailableException e) {
                if (!policy.fallsThroughToDirectCreate()) {
                    throw e;
                }
                LOG.warning("pool " + config.poolName + ": state store unavailable, creating directly");
                break;
            }
            killLater(taken.getDiscardedAliveSandboxIds());
            if (taken.getSandboxId() == null) {
                break;
            }
            tried++;
            lastId = taken.getSandboxId();
            Sandbox sb;
            try {
                sb = connectIdle(lastId);
            } catch (SandboxException e) {
                killLater(List.of(lastId));
                if (e instanceof SandboxApiException && (((SandboxApiException) e).getStatusCode() == 401
                        || ((SandboxApiException) e).getStatusCode() == 403)) {
                    throw e; // the next candidate cannot fix credentials
                }
                LOG.info("pool " + config.poolName + ": idle sandbox " + lastId + " unusable: " + e.getMessage());
                lastFailure = e;
                store.removeIdle(config.poolName, lastId);
                continue;
            }
            return finish(sb, sandboxTimeout);
        }
        if (!policy.fallsThroughToDirectCreate()) {
            if (tried == 0) {
                throw new PoolEmptyException("Cannot acquire: idle buffer empty; policy is " + policy);
            }
            throw new PoolAcquireFailedException("Cannot acquire: idle connect failed for " + tried
                    + " candidate(s); last sandbox_id=" + lastId + "; policy is " + policy, lastFailure);
        }
        if (lifecycle != PoolLifecycleState.RUNNING) {
            throw new PoolNotRunningException("Cannot acquire when pool state is " + lifecycle);
        }
        requireActiveNamespace();
        return finish(create(false), sandboxTimeout);
    }

    private Sandbox connectIdle(String sandboxId) {
        Sandbox.Connector c = Sandbox.connector().sandboxId(sandboxId).connectionConfig(config.connectionConfig)
                .connectTimeout(config.acquireReadyTimeout).healthCheckPollingInterval(config.acquireHealthCheckPollingInterval)
                .skipHealthCheck(config.acquireSkipHealthCheck);
        if (config.acquireHealthCheck != null) {
            c.healthCheck(config.acquireHealthCheck);
        }
        return c.connect();
    }

    private Sandbox finish(Sandbox sb, Duration sandboxTimeout) {
        try {
            if (sandboxTimeout != null) {
                sb.renew(sandboxTimeout);
            }
            return sb;
        } catch (RuntimeException e) {
            killQuietly(sb);
            throw e;
        }
    }

    /** A sandbox from the creation spec, alive for the idle timeout (warmup) or as acquired (direct create). */
    private Sandbox create(boolean warmup) {
        if (config.sandboxCreator != null) {
            PooledSandboxCreateContext ctx = warmup
                    ? new PooledSandboxCreateContext(config.poolName, ownerId, config.idleTimeout,
                            PooledSandboxCreateContext.Reason.WARMUP, config.warmupReadyTimeout,
                            config.warmupHealthCheckPollingInterval, config.warmupSkipHealthCheck,
                            config.warmupHealthCheck, config.connectionConfig, config.connectionConfig)
                    : new PooledSandboxCreateContext(config.poolName, ownerId, config.idleTimeout,
                            PooledSandboxCreateContext.Reason.DIRECT_CREATE, config.acquireReadyTimeout,
                            config.acquireHealthCheckPollingInterval, config.acquireSkipHealthCheck,
                            config.acquireHealthCheck, config.connectionConfig, config.connectionConfig);
            Sandbox sb = config.sandboxCreator.create(ctx);
            if (sb == null) {
                throw new SandboxInternalException("pool " + config.poolName + ": sandboxCreator returned null");
            }
            return sb;
        }
        PoolCreationSpec s = config.creationSpec;
        Sandbox.Builder b = Sandbox.builder().connectionConfig(config.connectionConfig).imageSpec(s.getImageSpec())
                .entrypoint(s.getEntrypoint()).resource(s.getResource()).env(s.getEnv()).metadata(s.getMetadata())
                .extensions(s.getExtensions()).timeout(config.idleTimeout);
        if (s.getNetworkPolicy() != null) {
            b.networkPolicy(s.getNetworkPolicy());
        }
        if (s.getPlatform() != null) {
            b.platform(s.getPlatform());
        }
        if (s.getSecureAccess()) {
            b.secureAccess();
        }
        if (s.getVolumes() != null) {
            b.volumes(s.getVolumes());
        }
        if (warmup) {
            b.readyTimeout(config.warmupReadyTimeout).healthCheckPollingInterval(config.warmupHealthCheckPollingInterval)
                    .skipHealthCheck(config.warmupSkipHealthCheck);
            if (config.warmupHealthCheck != null) {
                b.healthCheck(config.warmupHealthCheck);
            }
        } else {
            b.readyTimeout(config.acquireReadyTimeout).healthCheckPollingInterval(config.acquireHealthCheckPollingInterval)
                    .skipHealthCheck(config.acquireSkipHealthCheck);
            if (config.acquireHealthCheck != null) {
                b.healthCheck(config.acquireHealthCheck);
            }
        }
        return b.build();
    }

    // ---- other operations ----

    /** Sets the shared idle target (every instance on the store follows it). */
    public void resize(int maxIdle) {
        if (maxIdle < 0) {
            throw new InvalidArgumentException("maxIdle must be >= 0");
        }
        store.setMaxIdle(config.poolName, maxIdle);
        currentMaxIdle = maxIdle;
    }

    /** Takes every idle sandbox out of the store and kills it; returns how many were taken. */
    public int releaseAllIdle() {
        int n = 0;
        SandboxManager m = SandboxManager.builder().connectionConfig(config.connectionConfig).build();
        try {
            String id;
            while ((id = store.tryTakeIdle(config.poolName)) != null) {
                n++;
                try {
                    m.killSandbox(id);
                } catch (SandboxException e) {
                    LOG.fine("pool " + config.poolName + ": killing idle " + id + " failed: " + e.getMessage());
                }
            }
        } finally {
            m.close();
        }
        return n;
    }

    public PoolSnapshot snapshot() {
        PoolLifecycleState lc = lifecycle;
        int idle = store.snapshotCounters(config.poolName).getIdleCount();
        Integer shared = store.getMaxIdle(config.poolName);
        synchronized (this) {
            PoolState state;
            if (lc == PoolLifecycleState.DRAINING) {
                state = PoolState.DRAINING;
            } else if (lc != PoolLifecycleState.RUNNING && lc != PoolLifecycleState.STARTING) {
                state = PoolState.STOPPED;
            } else {
                state = failureCount >= config.degradedThreshold ? PoolState.DEGRADED : PoolState.HEALTHY;
            }
            return new PoolSnapshot(state, lc, idle, shared != null ? shared : currentMaxIdle, failureCount, false,
                    lastError, inFlight.get());
        }
    }

    public List<IdleEntry> snapshotIdleEntries() {
        return store.snapshotIdleEntries(config.poolName);
    }

    // ---- reconcile (the primary lock holder keeps the idle buffer at maxIdle) ----

    private void reconcileSafely() {
        try {
            reconcile();
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "pool " + config.poolName + ": reconcile failed", e);
        }
    }

    private void heartbeatSafely() {
        try {
            if (lifecycle == PoolLifecycleState.RUNNING) {
                heartbeat();
            }
        } catch (RuntimeException e) {
            primary = false; // cannot tell: stop committing warmups until the lock is confirmed
            LOG.log(Level.WARNING, "pool " + config.poolName + ": primary lock heartbeat failed", e);
        }
    }

    /** Renews the primary lock (or tries to take it); both scheduled tasks run on one thread. */
    private void heartbeat() {
        primary = primary ? store.renewPrimaryLock(config.poolName, ownerId, config.primaryLockTtl)
                : store.tryAcquirePrimaryLock(config.poolName, ownerId, config.primaryLockTtl);
    }

    private void reconcile() {
        if (lifecycle != PoolLifecycleState.RUNNING) {
            return;
        }
        String name = config.poolName;
        if (store.getDestroyState(name) != PoolDestroyState.ACTIVE) {
            return; // a destroy fenced the name: no more warmups (the lock cannot be taken either)
        }
        heartbeat();
        if (!primary) {
            return;
        }
        killLater(store.reapExpiredIdle(name, Instant.now(), config.acquireMinRemainingTtl));
        Integer shared = store.getMaxIdle(name);
        int maxIdle = shared != null ? shared : currentMaxIdle;
        int idle = store.snapshotCounters(name).getIdleCount();
        if (idle > maxIdle) {
            for (int i = 0; i < Math.min(idle - maxIdle, config.warmupConcurrency); i++) {
                String id = store.tryTakeIdle(name);
                if (id == null) {
                    break;
                }
                killLater(List.of(id));
            }
            return;
        }
        int toCreate = Math.min(maxIdle - idle - warming.get(), config.warmupConcurrency - warming.get());
        int gen = generation;
        for (int i = 0; i < toCreate; i++) {
            warming.incrementAndGet();
            try {
                workers.execute(() -> warmup(gen));
            } catch (RuntimeException e) {
                warming.decrementAndGet();
                throw e;
            }
        }
    }

    private void warmup(int gen) {
        Sandbox sb = null;
        try {
            sb = create(true);
            if (config.warmupSandboxPreparer != null) {
                config.warmupSandboxPreparer.prepare(sb);
            }
            if (gen != generation || lifecycle != PoolLifecycleState.RUNNING || !primary) {
                killQuietly(sb); // a shutdown or a lost lock retired this warmup
                return;
            }
            try {
                store.putIdle(config.poolName, sb.getId());
            } catch (PoolDestroyedException fenced) {
                killQuietly(sb); // destroyed while warming: not a pool failure
                return;
            }
            sb.close();
            synchronized (this) {
                failureCount = 0;
                lastError = null;
            }
        } catch (Exception e) {
            LOG.log(Level.INFO, "pool " + config.poolName + ": warmup failed", e);
            synchronized (this) {
                failureCount++;
                lastError = String.valueOf(e.getMessage());
            }
            if (sb != null) {
                killQuietly(sb);
            }
        } finally {
            warming.decrementAndGet();
        }
    }

    private void killQuietly(Sandbox sb) {
        try {
            sb.kill();
        } catch (SandboxException e) {
            LOG.fine("pool " + config.poolName + ": killing " + sb.getId() + " failed: " + e.getMessage());
        } finally {
            sb.close();
        }
    }

    /** Kills ids in the background (best effort: they expire on the server anyway). */
    private void killLater(List<String> ids) {
        if (ids.isEmpty()) {
            return;
        }
        ExecutorService w = workers;
        Runnable kill = () -> {
            try (SandboxManager m = SandboxManager.builder().connectionConfig(config.connectionConfig).build()) {
                for (String id : ids) {
                    try {
                        m.killSandbox(id);
                    } catch (SandboxException e) {
                        LOG.fine("pool " + config.poolName + ": killing " + id + " failed: " + e.getMessage());
                    }
                }
            }
        };
        try {
            w.execute(kill);
        } catch (RuntimeException e) {
            kill.run(); // the pool is stopping: kill on this thread
        }
    }

    // ---- builder ----

    /** Builder of {@link SandboxPool} (defaults as the official SDK). */
    public static final class Builder implements Cloneable {
        private String poolName;
        private String ownerId;
        private Integer maxIdleSet;
        private int maxIdle;
        private PoolStateStore stateStore;
        private ConnectionConfig connectionConfig;
        private PoolCreationSpec creationSpec;
        private PooledSandboxCreator sandboxCreator;
        private Integer warmupConcurrency;
        private Duration primaryLockTtl = Duration.ofSeconds(60);
        private Duration reconcileInterval = Duration.ofSeconds(30);
        private int degradedThreshold = 3;
        private int maxAcquireRetries = 3;
        private Duration acquireReadyTimeout = Duration.ofSeconds(30);
        private Duration acquireHealthCheckPollingInterval = Duration.ofMillis(200);
        private Predicate<Sandbox> acquireHealthCheck;
        private boolean acquireSkipHealthCheck;
        private Duration acquireMinRemainingTtl;
        private Duration warmupReadyTimeout = Duration.ofSeconds(30);
        private Duration warmupHealthCheckPollingInterval = Duration.ofMillis(200);
        private Predicate<Sandbox> warmupHealthCheck;
        private SandboxPreparer warmupSandboxPreparer;
        private boolean warmupSkipHealthCheck;
        private Duration idleTimeout = Duration.ofHours(24);
        private Duration drainTimeout = Duration.ofSeconds(30);

        private static Duration positive(Duration d, String what) {
            if (d == null || d.isZero() || d.isNegative()) {
                throw new InvalidArgumentException(what + " must be positive");
            }
            return d;
        }

        public Builder poolName(String poolName) {
            if (poolName == null || poolName.trim().isEmpty()) {
                throw new InvalidArgumentException("poolName must not be blank");
            }
            this.poolName = poolName;
            return this;
        }

        public Builder ownerId(String ownerId) {
            if (ownerId == null || ownerId.trim().isEmpty()) {
                throw new InvalidArgumentException("ownerId must not be blank");
            }
            this.ownerId = ownerId;
            return this;
        }

        public Builder maxIdle(int maxIdle) {
            if (maxIdle < 0) {
                throw new InvalidArgumentException("maxIdle must be >= 0");
            }
            this.maxIdleSet = maxIdle;
            this.maxIdle = maxIdle;
            return this;
        }

        public Builder stateStore(PoolStateStore stateStore) {
            this.stateStore = stateStore;
            return this;
        }

        public Builder connectionConfig(ConnectionConfig connectionConfig) {
            this.connectionConfig = connectionConfig;
            return this;
        }

        public Builder creationSpec(PoolCreationSpec creationSpec) {
            this.creationSpec = creationSpec;
            return this;
        }

        /**
         * (1.1) Creates the pool's sandboxes (warmups and direct creates) instead of
         * {@code Sandbox.builder()} from {@link #creationSpec} (still required).
         */
        public Builder sandboxCreator(PooledSandboxCreator sandboxCreator) {
            this.sandboxCreator = sandboxCreator;
            return this;
        }

        public Builder warmupConcurrency(int warmupConcurrency) {
            if (warmupConcurrency <= 0) {
                throw new InvalidArgumentException("warmupConcurrency must be positive");
            }
            this.warmupConcurrency = warmupConcurrency;
            return this;
        }

        public Builder primaryLockTtl(Duration primaryLockTtl) {
            this.primaryLockTtl = positive(primaryLockTtl, "primaryLockTtl");
            return this;
        }

        public Builder reconcileInterval(Duration reconcileInterval) {
            this.reconcileInterval = positive(reconcileInterval, "reconcileInterval");
            return this;
        }

        public Builder degradedThreshold(int degradedThreshold) {
            if (degradedThreshold <= 0) {
                throw new InvalidArgumentException("degradedThreshold must be positive");
            }
            this.degradedThreshold = degradedThreshold;
            return this;
        }

        /** Idle candidates one acquire may try under the {@code RETRY_NEXT_IDLE*} policies (default 3, at least 1). */
        public Builder maxAcquireRetries(int maxAcquireRetries) {
            if (maxAcquireRetries < 1) {
                throw new InvalidArgumentException("maxAcquireRetries must be >= 1");
            }
            this.maxAcquireRetries = maxAcquireRetries;
            return this;
        }

        public Builder acquireReadyTimeout(Duration d) {
            this.acquireReadyTimeout = positive(d, "acquireReadyTimeout");
            return this;
        }

        public Builder acquireHealthCheckPollingInterval(Duration d) {
            this.acquireHealthCheckPollingInterval = positive(d, "acquireHealthCheckPollingInterval");
            return this;
        }

        public Builder acquireHealthCheck(Predicate<Sandbox> check) {
            this.acquireHealthCheck = check;
            return this;
        }

        public Builder acquireSkipHealthCheck(boolean skip) {
            this.acquireSkipHealthCheck = skip;
            return this;
        }

        public Builder acquireSkipHealthCheck() {
            return acquireSkipHealthCheck(true);
        }

        /**
         * Idle sandboxes with less time left than this are not handed out (they are killed and replaced).
         * Default {@code min(60 s, idleTimeout / 2)}; must be below {@code idleTimeout}; zero opts out.
         */
        public Builder acquireMinRemainingTtl(Duration d) {
            if (d != null && d.isNegative()) {
                throw new InvalidArgumentException("acquireMinRemainingTtl must not be negative");
            }
            this.acquireMinRemainingTtl = d;
            return this;
        }

        public Builder warmupReadyTimeout(Duration d) {
            this.warmupReadyTimeout = positive(d, "warmupReadyTimeout");
            return this;
        }

        public Builder warmupHealthCheckPollingInterval(Duration d) {
            this.warmupHealthCheckPollingInterval = positive(d, "warmupHealthCheckPollingInterval");
            return this;
        }

        public Builder warmupHealthCheck(Predicate<Sandbox> check) {
            this.warmupHealthCheck = check;
            return this;
        }

        public Builder warmupSandboxPreparer(SandboxPreparer preparer) {
            this.warmupSandboxPreparer = preparer;
            return this;
        }

        public Builder warmupSkipHealthCheck(boolean skip) {
            this.warmupSkipHealthCheck = skip;
            return this;
        }

        public Builder warmupSkipHealthCheck() {
            return warmupSkipHealthCheck(true);
        }

        /** How long a warmed sandbox lives (and stays idle) before it expires; default 24 h. */
        public Builder idleTimeout(Duration d) {
            this.idleTimeout = positive(d, "idleTimeout");
            return this;
        }

        public Builder drainTimeout(Duration d) {
            if (d == null || d.isNegative()) {
                throw new InvalidArgumentException("drainTimeout must not be negative");
            }
            this.drainTimeout = d;
            return this;
        }

        public SandboxPool build() {
            if (poolName == null) {
                throw new InvalidArgumentException("poolName must be specified");
            }
            if (maxIdleSet == null) {
                throw new InvalidArgumentException("maxIdle must be specified");
            }
            if (stateStore == null) {
                throw new InvalidArgumentException("stateStore must be specified");
            }
            if (creationSpec == null) {
                throw new InvalidArgumentException("creationSpec must be specified");
            }
            Builder c;
            try {
                // The pool keeps its own copy: later builder calls do not change it.
                c = (Builder) clone();
            } catch (CloneNotSupportedException e) {
                throw new AssertionError(e);
            }
            if (c.connectionConfig == null) {
                c.connectionConfig = ConnectionConfig.builder().build();
            }
            if (c.warmupConcurrency == null) {
                c.warmupConcurrency = Math.max(1, (int) Math.ceil(c.maxIdle * 0.2));
            }
            if (c.acquireMinRemainingTtl == null) {
                Duration half = c.idleTimeout.dividedBy(2);
                c.acquireMinRemainingTtl = half.compareTo(Duration.ofSeconds(60)) > 0 ? Duration.ofSeconds(60) : half;
            } else if (c.acquireMinRemainingTtl.compareTo(c.idleTimeout) >= 0) {
                throw new InvalidArgumentException("acquireMinRemainingTtl (" + c.acquireMinRemainingTtl
                        + ") must be strictly less than idleTimeout (" + c.idleTimeout
                        + "); otherwise every warmed idle entry would be rejected");
            }
            if (c.primaryLockTtl.compareTo(c.warmupReadyTimeout) <= 0) {
                LOG.warning("pool " + poolName + ": primaryLockTtl " + c.primaryLockTtl + " <= warmupReadyTimeout "
                        + c.warmupReadyTimeout + "; the lock may lapse during a warmup");
            }
            return new SandboxPool(c);
        }
    }
}
