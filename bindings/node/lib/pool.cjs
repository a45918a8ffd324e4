'use strict';
// The client-side sandbox pool of the official npm SDK (SandboxPool, its state-store
// contract with the in-memory store, SandboxPoolManager.destroy), in plain JS over this
// package's Sandbox / SandboxManager. Same semantics as the Python and Go pools of this
// repository, so pools of any language can share one Redis namespace (lib/pool-redis.cjs).

const {
  InvalidArgumentException,
  PoolAcquireFailedException,
  PoolDestroyIncompleteException,
  PoolDestroyedException,
  PoolEmptyException,
  PoolNotRunningException,
  PoolStateStoreUnavailableException,
  SandboxReadyTimeoutException,
} = require('./errors.cjs');

const AcquirePolicy = Object.freeze({
  DIRECT_CREATE: 'DIRECT_CREATE',
  FAIL_FAST: 'FAIL_FAST',
  RETRY_NEXT_IDLE: 'RETRY_NEXT_IDLE',
  RETRY_NEXT_IDLE_THEN_CREATE: 'RETRY_NEXT_IDLE_THEN_CREATE',
});
const PoolLifecycleState = Object.freeze({
  NOT_STARTED: 'NOT_STARTED',
  STARTING: 'STARTING',
  RUNNING: 'RUNNING',
  DRAINING: 'DRAINING',
  STOPPED: 'STOPPED',
});
const PoolState = Object.freeze({ HEALTHY: 'HEALTHY', DEGRADED: 'DEGRADED', DRAINING: 'DRAINING', STOPPED: 'STOPPED' });
/** The earlier official name of the health half of PoolState (kept in the snapshot as healthState). */
const PoolHealthState = Object.freeze({ HEALTHY: 'HEALTHY', DEGRADED: 'DEGRADED' });
const PoolDestroyState = Object.freeze({ ACTIVE: 'ACTIVE', DESTROYING: 'DESTROYING', DESTROYED: 'DESTROYED' });
const PoolDestroyStrategy = Object.freeze({ FORCE: 'FORCE' });
const PooledSandboxCreateReason = Object.freeze({ WARMUP: 'WARMUP', DIRECT_CREATE: 'DIRECT_CREATE' });

const DEFAULT_IDLE_TIMEOUT_SECONDS = 24 * 60 * 60;
const DEFAULT_READY_TIMEOUT_SECONDS = 30;
const DEFAULT_POLLING_INTERVAL_MILLIS = 200;
const DEFAULT_DRAIN_TIMEOUT_SECONDS = 30;
const DEFAULT_TOMBSTONE_TTL_SECONDS = 7 * 24 * 60 * 60;
/** The reconcile tick (the official pools run it every second). */
const DEFAULT_RECONCILE_INTERVAL_SECONDS = 1;
/** Degraded backoff: 30 s doubling per failure past the threshold, at most a day. */
const BACKOFF_BASE_SECONDS = 30;
const BACKOFF_MAX_SECONDS = 24 * 60 * 60;

/**
 * The Sandbox / SandboxManager calls of the pool. Tests swap them for a fake backend
 * through this symbol-keyed option (not part of the public API).
 */
const BACKEND = Symbol.for('opensandbox-node.pool.backend');

function realBackend() {
  const m = require('./index.cjs');
  return {
    config: (c) => (c instanceof m.ConnectionConfig ? c : new m.ConnectionConfig(c ?? {})),
    create: (opts) => m.Sandbox.create(opts),
    connect: (opts) => m.Sandbox.connect(opts),
    manager: (opts) => m.SandboxManager.create(opts),
  };
}

function bad(message) {
  return new InvalidArgumentException({ message });
}
function requireNonNegative(value, name) {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw bad(`${name} must be a non-negative number`);
}
function requirePositive(value, name) {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) throw bad(`${name} must be a positive number`);
}
function requireNonNegativeInteger(value, name) {
  requireNonNegative(value, name);
  if (!Number.isInteger(value)) throw bad(`${name} must be an integer`);
}
function requirePositiveInteger(value, name) {
  requirePositive(value, name);
  if (!Number.isInteger(value)) throw bad(`${name} must be an integer`);
}
function requireName(value, name) {
  if (typeof value !== 'string' || !value.trim()) throw bad(`${name} must not be blank`);
}
function optionalFunction(value, name) {
  if (value != null && typeof value !== 'function') throw bad(`${name} must be a function`);
}

function randomId(prefix) {
  const random = globalThis.crypto?.randomUUID?.() ?? Math.random().toString(16).slice(2);
  return `${prefix}-${random}`;
}

function policyRetries(policy) {
  return policy === AcquirePolicy.RETRY_NEXT_IDLE || policy === AcquirePolicy.RETRY_NEXT_IDLE_THEN_CREATE;
}
function policyCreates(policy) {
  return policy === AcquirePolicy.DIRECT_CREATE || policy === AcquirePolicy.RETRY_NEXT_IDLE_THEN_CREATE;
}

function sleep(ms, signal) {
  signal?.throwIfAborted();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    function onAbort() {
      clearTimeout(timer);
      reject(signal.reason);
    }
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function message(error) {
  return error instanceof Error ? error.message : String(error);
}

// ---------------------------------------------------------------------------------
// InMemoryPoolStateStore

/** Process-local pool state. Each call is atomic within one JavaScript runtime. */
class InMemoryPoolStateStore {
  #pools = new Map();
  #tombstones = new Map();

  #state(poolName) {
    requireName(poolName, 'poolName');
    let s = this.#pools.get(poolName);
    if (!s) {
      // `idle` is the membership map (id → expiry ms); `order` is hand-out order and may
      // hold ids no longer idle, skipped when reached.
      s = { idle: new Map(), order: [], lock: undefined, maxIdle: undefined, ttlMs: DEFAULT_IDLE_TIMEOUT_SECONDS * 1000 };
      this.#pools.set(poolName, s);
    }
    return s;
  }

  #fence(poolName) {
    const state = this.#destroyState(poolName);
    if (state !== PoolDestroyState.ACTIVE) throw new PoolDestroyedException(poolName, state);
  }

  #destroyState(poolName) {
    const t = this.#tombstones.get(poolName);
    if (!t) return PoolDestroyState.ACTIVE;
    if (t.expiresAtMs !== undefined && t.expiresAtMs <= Date.now()) {
      this.#tombstones.delete(poolName);
      return PoolDestroyState.ACTIVE;
    }
    return t.state;
  }

  async tryTakeIdle(poolName) {
    return (await this.tryTakeIdleWithMinTtl(poolName, 0)).sandboxId;
  }

  async tryTakeIdleWithMinTtl(poolName, minRemainingTtlSeconds) {
    requireNonNegative(minRemainingTtlSeconds, 'minRemainingTtlSeconds');
    const s = this.#state(poolName);
    const now = Date.now();
    const cutoff = now + minRemainingTtlSeconds * 1000;
    const result = { discardedAliveSandboxIds: [] };
    while (s.order.length > 0) {
      const id = s.order.shift();
      const expiresAt = s.idle.get(id);
      if (expiresAt === undefined) continue;
      s.idle.delete(id);
      if (expiresAt > cutoff) {
        result.sandboxId = id;
        return result;
      }
      if (expiresAt > now) result.discardedAliveSandboxIds.push(id);
    }
    return result;
  }

  async putIdle(poolName, sandboxId) {
    requireName(sandboxId, 'sandboxId');
    const s = this.#state(poolName);
    this.#fence(poolName);
    const now = Date.now();
    const current = s.idle.get(sandboxId);
    if (current !== undefined && current > now) return;
    if (current === undefined) s.order.push(sandboxId);
    s.idle.set(sandboxId, now + s.ttlMs);
  }

  async removeIdle(poolName, sandboxId) {
    const s = this.#state(poolName);
    s.idle.delete(sandboxId);
    s.order = s.order.filter((id) => s.idle.has(id));
  }

  async tryAcquirePrimaryLock(poolName, ownerId, ttlSeconds) {
    return this.#lock(poolName, ownerId, ttlSeconds, false);
  }

  async renewPrimaryLock(poolName, ownerId, ttlSeconds) {
    return this.#lock(poolName, ownerId, ttlSeconds, true);
  }

  #lock(poolName, ownerId, ttlSeconds, renewOnly) {
    requireName(ownerId, 'ownerId');
    requirePositive(ttlSeconds, 'ttlSeconds');
    const s = this.#state(poolName);
    if (this.#destroyState(poolName) !== PoolDestroyState.ACTIVE) return false;
    const now = Date.now();
    const live = s.lock && s.lock.expiresAtMs > now;
    if (live && s.lock.ownerId !== ownerId) return false;
    if (renewOnly && !(live && s.lock.ownerId === ownerId)) return false;
    s.lock = { ownerId, expiresAtMs: now + ttlSeconds * 1000 };
    return true;
  }

  async releasePrimaryLock(poolName, ownerId) {
    const s = this.#state(poolName);
    if (s.lock?.ownerId === ownerId) s.lock = undefined;
  }

  async reapExpiredIdle(poolName, now) {
    await this.reapExpiredIdleWithMinTtl(poolName, now, 0);
  }

  async reapExpiredIdleWithMinTtl(poolName, now, minRemainingTtlSeconds) {
    requireNonNegative(minRemainingTtlSeconds, 'minRemainingTtlSeconds');
    const s = this.#state(poolName);
    const nowMs = now instanceof Date ? now.getTime() : Date.now();
    const cutoff = nowMs + minRemainingTtlSeconds * 1000;
    const discardedAliveSandboxIds = [];
    for (const [id, expiresAt] of s.idle) {
      if (expiresAt <= cutoff) {
        s.idle.delete(id);
        if (expiresAt > nowMs) discardedAliveSandboxIds.push(id);
      }
    }
    s.order = s.order.filter((id) => s.idle.has(id));
    return { discardedAliveSandboxIds };
  }

  async snapshotCounters(poolName) {
    await this.reapExpiredIdle(poolName, new Date());
    return { idleCount: this.#state(poolName).idle.size };
  }

  async snapshotIdleEntries(poolName) {
    await this.reapExpiredIdle(poolName, new Date());
    const s = this.#state(poolName);
    return s.order.filter((id) => s.idle.has(id)).map((id) => ({ sandboxId: id, expiresAt: new Date(s.idle.get(id)) }));
  }

  async getMaxIdle(poolName) {
    return this.#state(poolName).maxIdle;
  }

  async setMaxIdle(poolName, maxIdle) {
    if (!Number.isInteger(maxIdle) || maxIdle < 0) throw bad('maxIdle must be a non-negative integer');
    const s = this.#state(poolName);
    this.#fence(poolName);
    s.maxIdle = maxIdle;
  }

  async setIdleEntryTtl(poolName, ttlSeconds) {
    requirePositive(ttlSeconds, 'ttlSeconds');
    const s = this.#state(poolName);
    this.#fence(poolName);
    s.ttlMs = ttlSeconds * 1000;
  }

  async getDestroyState(poolName) {
    requireName(poolName, 'poolName');
    return this.#destroyState(poolName);
  }

  async beginDestroy(poolName, ownerId) {
    requireName(poolName, 'poolName');
    requireName(ownerId, 'ownerId');
    if (this.#destroyState(poolName) === PoolDestroyState.DESTROYED) {
      throw new PoolDestroyedException(poolName, PoolDestroyState.DESTROYED);
    }
    this.#tombstones.set(poolName, { state: PoolDestroyState.DESTROYING, ownerId, expiresAtMs: undefined });
  }

  async clearPoolState(poolName) {
    requireName(poolName, 'poolName');
    this.#pools.delete(poolName);
  }

  async markDestroyed(poolName, ownerId, tombstoneTtlSeconds) {
    requireName(poolName, 'poolName');
    requireName(ownerId, 'ownerId');
    if (tombstoneTtlSeconds != null) requirePositive(tombstoneTtlSeconds, 'tombstoneTtlSeconds');
    this.#tombstones.set(poolName, {
      state: PoolDestroyState.DESTROYED,
      ownerId,
      expiresAtMs: tombstoneTtlSeconds == null ? undefined : Date.now() + tombstoneTtlSeconds * 1000,
    });
  }
}

// ---------------------------------------------------------------------------------
// SandboxPool

/** A client-side buffer of clean, ready sandboxes. */
class SandboxPool {
  #o;
  #backend;
  #manager;
  #lifecycle = PoolLifecycleState.NOT_STARTED;
  #health = PoolHealthState.HEALTHY;
  #failureCount = 0;
  #lastError;
  #backoffUntilMs = 0;
  #inFlight = 0;
  #timer;
  #startPromise;
  #reconcilePromise;
  #shutdownPromise;
  #abort;
  #allowCommitWhileDraining = false;

  constructor(options) {
    if (options == null || typeof options !== 'object') throw bad('options are required');
    const poolName = typeof options.poolName === 'string' ? options.poolName.trim() : '';
    if (!poolName) throw bad('poolName is required');
    requireNonNegativeInteger(options.maxIdle, 'maxIdle');
    const backend = options[BACKEND] ?? realBackend();
    const idleTimeoutSeconds = options.idleTimeoutSeconds ?? DEFAULT_IDLE_TIMEOUT_SECONDS;
    requirePositive(idleTimeoutSeconds, 'idleTimeoutSeconds');
    const acquireMinRemainingTtlSeconds = options.acquireMinRemainingTtlSeconds ?? Math.min(idleTimeoutSeconds / 2, 60);
    const creationSpec = options.creationSpec ?? {};
    optionalFunction(options.sandboxCreator, 'sandboxCreator');
    if (!options.sandboxCreator && (creationSpec.image == null) === (creationSpec.snapshotId == null)) {
      throw bad('creationSpec must provide exactly one of image or snapshotId when sandboxCreator is absent');
    }
    if (options.stateStore != null && typeof options.stateStore.tryTakeIdleWithMinTtl !== 'function') {
      throw bad('stateStore must implement PoolStateStore');
    }
    const o = {
      poolName,
      maxIdle: options.maxIdle,
      connectionConfig: backend.config(options.connectionConfig),
      creationSpec,
      sandboxCreator: options.sandboxCreator,
      stateStore: options.stateStore ?? new InMemoryPoolStateStore(),
      ownerId: options.ownerId?.trim() ? options.ownerId.trim() : randomId('pool-owner'),
      warmupCreateQps: options.warmupCreateQps ?? 10,
      warmupConcurrency: options.warmupConcurrency ?? Math.max(1, Math.ceil(options.maxIdle * 0.2)),
      warmupConcurrencyConfigured: options.warmupConcurrency !== undefined,
      primaryLockTtlSeconds: options.primaryLockTtlSeconds ?? 60,
      reconcileIntervalSeconds: options.reconcileIntervalSeconds ?? DEFAULT_RECONCILE_INTERVAL_SECONDS,
      degradedThreshold: options.degradedThreshold ?? 3,
      emptyBehavior: options.emptyBehavior ?? AcquirePolicy.DIRECT_CREATE,
      idleTimeoutSeconds,
      drainTimeoutSeconds: options.drainTimeoutSeconds ?? DEFAULT_DRAIN_TIMEOUT_SECONDS,
      acquireMinRemainingTtlSeconds,
      acquireReadyTimeoutSeconds: options.acquireReadyTimeoutSeconds ?? DEFAULT_READY_TIMEOUT_SECONDS,
      acquireHealthCheckPollingIntervalMillis:
        options.acquireHealthCheckPollingIntervalMillis ?? DEFAULT_POLLING_INTERVAL_MILLIS,
      acquireHealthCheck: options.acquireHealthCheck,
      acquireSkipHealthCheck: !!options.acquireSkipHealthCheck,
      maxAcquireRetries: options.maxAcquireRetries ?? 3,
      warmupReadyTimeoutSeconds: options.warmupReadyTimeoutSeconds ?? DEFAULT_READY_TIMEOUT_SECONDS,
      warmupHealthCheckInitialDelayMillis: options.warmupHealthCheckInitialDelayMillis ?? 0,
      warmupHealthCheckPollingIntervalMillis:
        options.warmupHealthCheckPollingIntervalMillis ?? DEFAULT_POLLING_INTERVAL_MILLIS,
      warmupHealthCheck: options.warmupHealthCheck,
      // `warmupPreparer` is the earlier official name of the preparer.
      warmupSandboxPreparer: options.warmupSandboxPreparer ?? options.warmupPreparer,
      warmupPostPrepareHealthCheck: options.warmupPostPrepareHealthCheck,
      warmupPostPrepareHealthCheckTimeoutSeconds: options.warmupPostPrepareHealthCheckTimeoutSeconds ?? 30,
      warmupSkipHealthCheck: !!options.warmupSkipHealthCheck,
      logger: options.logger,
    };
    requirePositiveInteger(o.warmupCreateQps, 'warmupCreateQps');
    requirePositiveInteger(o.warmupConcurrency, 'warmupConcurrency');
    requirePositive(o.primaryLockTtlSeconds, 'primaryLockTtlSeconds');
    requirePositive(o.reconcileIntervalSeconds, 'reconcileIntervalSeconds');
    requirePositiveInteger(o.degradedThreshold, 'degradedThreshold');
    requireNonNegative(o.drainTimeoutSeconds, 'drainTimeoutSeconds');
    requireNonNegative(acquireMinRemainingTtlSeconds, 'acquireMinRemainingTtlSeconds');
    if (acquireMinRemainingTtlSeconds >= idleTimeoutSeconds) {
      throw bad('acquireMinRemainingTtlSeconds must be less than idleTimeoutSeconds');
    }
    requirePositive(o.acquireReadyTimeoutSeconds, 'acquireReadyTimeoutSeconds');
    requirePositive(o.warmupReadyTimeoutSeconds, 'warmupReadyTimeoutSeconds');
    requirePositive(o.acquireHealthCheckPollingIntervalMillis, 'acquireHealthCheckPollingIntervalMillis');
    requirePositive(o.warmupHealthCheckPollingIntervalMillis, 'warmupHealthCheckPollingIntervalMillis');
    requireNonNegative(o.warmupHealthCheckInitialDelayMillis, 'warmupHealthCheckInitialDelayMillis');
    requirePositive(o.warmupPostPrepareHealthCheckTimeoutSeconds, 'warmupPostPrepareHealthCheckTimeoutSeconds');
    requirePositiveInteger(o.maxAcquireRetries, 'maxAcquireRetries');
    if (!Object.values(AcquirePolicy).includes(o.emptyBehavior)) throw bad(`unknown acquire policy ${o.emptyBehavior}`);
    for (const k of [
      'acquireHealthCheck',
      'warmupHealthCheck',
      'warmupSandboxPreparer',
      'warmupPostPrepareHealthCheck',
    ]) {
      optionalFunction(o[k], k);
    }
    this.#o = o;
    this.#backend = backend;
  }

  static create(options) {
    return new SandboxPool(options);
  }

  static inMemoryStateStore() {
    return new InMemoryPoolStateStore();
  }

  get poolName() {
    return this.#o.poolName;
  }

  get ownerId() {
    return this.#o.ownerId;
  }

  async start() {
    if (this.#lifecycle === PoolLifecycleState.RUNNING) return;
    if (this.#lifecycle === PoolLifecycleState.STARTING) {
      await this.#startPromise;
      return;
    }
    if (this.#lifecycle === PoolLifecycleState.DRAINING) {
      throw new PoolNotRunningException(this.#o.poolName, this.#lifecycle);
    }
    this.#lifecycle = PoolLifecycleState.STARTING;
    this.#startPromise = (async () => {
      await this.#reconcilePromise?.catch(() => undefined);
      await this.#finishStart();
    })();
    try {
      await this.#startPromise;
    } finally {
      this.#startPromise = undefined;
    }
  }

  async #finishStart() {
    const { stateStore, poolName } = this.#o;
    const fail = (error) => {
      if (this.#lifecycle === PoolLifecycleState.STARTING) this.#lifecycle = PoolLifecycleState.STOPPED;
      return error;
    };
    try {
      const destroyState = await this.#destroyState();
      if (destroyState !== PoolDestroyState.ACTIVE) throw new PoolDestroyedException(poolName, destroyState);
      await stateStore.setMaxIdle(poolName, this.#o.maxIdle);
      await stateStore.setIdleEntryTtl(poolName, this.#o.idleTimeoutSeconds);
    } catch (cause) {
      if (cause instanceof PoolDestroyedException || cause instanceof PoolStateStoreUnavailableException) {
        throw fail(cause);
      }
      throw fail(new PoolStateStoreUnavailableException('start', cause));
    }
    if (this.#lifecycle !== PoolLifecycleState.STARTING) {
      throw new PoolNotRunningException(poolName, this.#lifecycle);
    }
    this.#abort = new AbortController();
    try {
      this.#manager ??= this.#backend.manager({ connectionConfig: this.#o.connectionConfig });
    } catch (cause) {
      throw fail(cause);
    }
    this.#recordSuccess();
    this.#lifecycle = PoolLifecycleState.RUNNING;
    this.#timer = setInterval(() => this.#triggerReconcile(), this.#o.reconcileIntervalSeconds * 1000);
    this.#timer.unref?.();
    if (this.#o.primaryLockTtlSeconds <= this.#o.warmupReadyTimeoutSeconds) {
      this.#o.logger?.warn?.('pool primary lock TTL may expire during warmup', {
        poolName,
        primaryLockTtlSeconds: this.#o.primaryLockTtlSeconds,
        warmupReadyTimeoutSeconds: this.#o.warmupReadyTimeoutSeconds,
      });
    }
    if (this.#o.maxIdle > 0) this.#triggerReconcile();
  }

  async acquire(options = {}) {
    const { poolName, stateStore } = this.#o;
    if (this.#lifecycle !== PoolLifecycleState.RUNNING) throw new PoolNotRunningException(poolName, this.#lifecycle);
    options.signal?.throwIfAborted();
    const policy = options.policy ?? this.#o.emptyBehavior;
    if (!Object.values(AcquirePolicy).includes(policy)) throw bad(`unknown acquire policy ${policy}`);
    const maxAttempts = policyRetries(policy) ? this.#o.maxAcquireRetries : 1;
    const minTtl = options.minRemainingTtlSeconds ?? this.#o.acquireMinRemainingTtlSeconds;
    requireNonNegative(minTtl, 'minRemainingTtlSeconds');
    if (options.sandboxTimeoutSeconds !== undefined) requirePositive(options.sandboxTimeoutSeconds, 'sandboxTimeoutSeconds');
    const skipHealthCheck = options.skipHealthCheck ?? this.#o.acquireSkipHealthCheck;

    this.#inFlight += 1;
    try {
      let attempted = false;
      let lastError;
      for (let attempt = 0; attempt < maxAttempts; attempt += 1) {
        let taken;
        try {
          taken = await stateStore.tryTakeIdleWithMinTtl(poolName, minTtl);
        } catch (cause) {
          if (cause instanceof PoolDestroyedException) throw cause;
          if (!policyCreates(policy)) throw new PoolStateStoreUnavailableException('tryTakeIdle', cause);
          this.#o.logger?.warn?.('pool state store unavailable; falling back to direct create', { poolName, error: cause });
          lastError = cause;
          break;
        }
        this.#killLater(taken.discardedAliveSandboxIds ?? []);
        if (!taken.sandboxId) break;
        attempted = true;
        let sandbox;
        try {
          sandbox = await this.#backend.connect({
            sandboxId: taken.sandboxId,
            connectionConfig: this.#o.connectionConfig,
            adapterFactory: this.#o.creationSpec.adapterFactory,
            skipHealthCheck: true,
          });
          if (!skipHealthCheck) {
            await this.#waitUntilHealthy(
              sandbox,
              this.#o.acquireHealthCheck,
              this.#o.acquireReadyTimeoutSeconds,
              this.#o.acquireHealthCheckPollingIntervalMillis,
              options.signal,
            );
          }
        } catch (cause) {
          lastError = cause;
          await sandbox?.close().catch(() => undefined);
          this.#killLater([taken.sandboxId]);
          if (options.signal?.aborted) throw options.signal.reason;
          this.#o.logger?.warn?.('pool idle sandbox connect or health check failed', {
            poolName,
            sandboxId: taken.sandboxId,
            attempt: attempt + 1,
            error: cause,
          });
          this.#ensureRunning();
          if (!policyRetries(policy)) break;
          continue;
        }
        try {
          if (options.sandboxTimeoutSeconds !== undefined) await sandbox.renew(options.sandboxTimeoutSeconds);
          this.#ensureRunning();
        } catch (cause) {
          await killAndClose(sandbox);
          throw cause;
        }
        return sandbox;
      }

      if (!policyCreates(policy)) {
        if (attempted) throw new PoolAcquireFailedException(poolName, lastError);
        throw new PoolEmptyException(poolName);
      }
      await this.#ensureNamespaceActive();
      const sandbox = await this.#createSandbox(PooledSandboxCreateReason.DIRECT_CREATE, options.signal);
      try {
        if (!skipHealthCheck) {
          await this.#waitUntilHealthy(
            sandbox,
            this.#o.acquireHealthCheck,
            this.#o.acquireReadyTimeoutSeconds,
            this.#o.acquireHealthCheckPollingIntervalMillis,
            options.signal,
          );
        }
        if (options.sandboxTimeoutSeconds !== undefined) await sandbox.renew(options.sandboxTimeoutSeconds);
        this.#ensureRunning();
        return sandbox;
      } catch (cause) {
        await killAndClose(sandbox);
        throw cause;
      }
    } finally {
      this.#inFlight -= 1;
      this.#triggerReconcile();
    }
  }

  async resize(maxIdle) {
    requireNonNegativeInteger(maxIdle, 'maxIdle');
    this.#ensureRunning();
    this.#inFlight += 1;
    try {
      await this.#storeCall('setMaxIdle', () => this.#o.stateStore.setMaxIdle(this.#o.poolName, maxIdle));
      this.#o.maxIdle = maxIdle;
      if (!this.#o.warmupConcurrencyConfigured) this.#o.warmupConcurrency = Math.max(1, Math.ceil(maxIdle * 0.2));
      this.#triggerReconcile();
    } finally {
      this.#inFlight -= 1;
    }
  }

  /** Kills the sandboxes idle at the call (not those warmed meanwhile); returns how many. */
  async releaseAllIdle() {
    const { poolName, stateStore } = this.#o;
    this.#inFlight += 1;
    try {
      const initial = (await this.#storeCall('snapshotCounters', () => stateStore.snapshotCounters(poolName))).idleCount;
      let released = 0;
      while (released < initial) {
        const sandboxId = await this.#storeCall('tryTakeIdle', () => stateStore.tryTakeIdle(poolName));
        if (!sandboxId) break;
        await this.#killSandboxIds([sandboxId]);
        released += 1;
      }
      return released;
    } finally {
      this.#inFlight -= 1;
    }
  }

  async snapshot() {
    const { poolName, stateStore } = this.#o;
    const counters = await this.#storeCall('snapshotCounters', () => stateStore.snapshotCounters(poolName));
    const maxIdle = await this.#storeCall('getMaxIdle', () => stateStore.getMaxIdle(poolName));
    let state = this.#health;
    if (this.#lifecycle === PoolLifecycleState.DRAINING) state = PoolState.DRAINING;
    else if (this.#lifecycle === PoolLifecycleState.STOPPED) state = PoolState.STOPPED;
    return {
      state,
      lifecycleState: this.#lifecycle,
      healthState: this.#health,
      idleCount: counters.idleCount,
      maxIdle: maxIdle ?? this.#o.maxIdle,
      failureCount: this.#failureCount,
      backoffActive: Date.now() < this.#backoffUntilMs,
      lastError: this.#lastError,
      inFlightOperations: this.#inFlight,
    };
  }

  snapshotIdleEntries() {
    return this.#storeCall('snapshotIdleEntries', () => this.#o.stateStore.snapshotIdleEntries(this.#o.poolName));
  }

  /**
   * Stops the pool: no more acquires or warmups. Graceful waits up to drainTimeoutSeconds
   * for in-flight work (a warmup finishing meanwhile still becomes idle); idle sandboxes
   * stay in the store for the next pool of this name (releaseAllIdle kills them).
   */
  async shutdown(graceful = true) {
    if (this.#lifecycle === PoolLifecycleState.NOT_STARTED || this.#lifecycle === PoolLifecycleState.STOPPED) {
      this.#lifecycle = PoolLifecycleState.STOPPED;
      return;
    }
    if (this.#lifecycle === PoolLifecycleState.DRAINING) {
      await this.#shutdownPromise;
      return;
    }
    this.#lifecycle = PoolLifecycleState.DRAINING;
    this.#allowCommitWhileDraining = !!graceful;
    this.#shutdownPromise = this.#finishShutdown(!!graceful);
    await this.#shutdownPromise;
  }

  async #finishShutdown(graceful) {
    try {
      await this.#startPromise?.catch(() => undefined);
      if (this.#timer) clearInterval(this.#timer);
      this.#timer = undefined;
      if (graceful) {
        const deadline = Date.now() + this.#o.drainTimeoutSeconds * 1000;
        while ((this.#inFlight > 0 || this.#reconcilePromise) && Date.now() < deadline) await sleep(10);
      }
      this.#allowCommitWhileDraining = false;
      this.#abort?.abort(new Error('Sandbox pool is shutting down'));
      try {
        await this.#o.stateStore.releasePrimaryLock(this.#o.poolName, this.#o.ownerId);
      } catch {
        // Best effort: the lock's TTL ends it anyway.
      }
      try {
        await this.#manager?.close();
      } catch {
        // The pool stops even when transport cleanup fails.
      }
      this.#manager = undefined;
    } finally {
      this.#allowCommitWhileDraining = false;
      this.#lifecycle = PoolLifecycleState.STOPPED;
      this.#shutdownPromise = undefined;
    }
  }

  close() {
    return this.shutdown(true);
  }

  #ensureRunning() {
    if (this.#lifecycle !== PoolLifecycleState.RUNNING) {
      throw new PoolNotRunningException(this.#o.poolName, this.#lifecycle);
    }
  }

  async #destroyState() {
    const store = this.#o.stateStore;
    if (typeof store.getDestroyState !== 'function') return PoolDestroyState.ACTIVE;
    return (await store.getDestroyState(this.#o.poolName)) ?? PoolDestroyState.ACTIVE;
  }

  /** Before a direct create: a destroyed namespace refuses; an unreachable store does not (the fallback). */
  async #ensureNamespaceActive() {
    let state;
    try {
      state = await this.#destroyState();
    } catch (error) {
      this.#o.logger?.warn?.('pool state store unavailable; destroy state unknown', { poolName: this.#o.poolName, error });
      return;
    }
    if (state !== PoolDestroyState.ACTIVE) throw new PoolDestroyedException(this.#o.poolName, state);
  }

  #triggerReconcile() {
    if (this.#lifecycle !== PoolLifecycleState.RUNNING || this.#reconcilePromise) return;
    if (Date.now() < this.#backoffUntilMs) return;
    this.#reconcilePromise = this.#reconcile()
      .then(
        (outcome) => {
          if (outcome === 'destroyed') this.#stopAfterDestroyed();
          else if (outcome !== 'idle') this.#recordSuccess();
        },
        (error) => {
          if (error instanceof PoolDestroyedException) this.#stopAfterDestroyed();
          else this.#recordFailure(error);
        },
      )
      .finally(() => {
        this.#reconcilePromise = undefined;
      });
  }

  #stopAfterDestroyed() {
    this.#o.logger?.warn?.('pool namespace was destroyed; stopping the pool', { poolName: this.#o.poolName });
    this.shutdown(false).catch(() => undefined);
  }

  /** One tick: 'idle' (another instance is primary), 'destroyed', or 'done'. */
  async #reconcile() {
    const { poolName, ownerId, primaryLockTtlSeconds, stateStore } = this.#o;
    if (!(await stateStore.tryAcquirePrimaryLock(poolName, ownerId, primaryLockTtlSeconds))) {
      return (await this.#destroyState()) === PoolDestroyState.ACTIVE ? 'idle' : 'destroyed';
    }
    let heartbeatError;
    let leadershipLost = false;
    let heartbeatChain = Promise.resolve();
    const heartbeat = setInterval(
      () => {
        heartbeatChain = heartbeatChain.then(async () => {
          try {
            if (!(await stateStore.renewPrimaryLock(poolName, ownerId, primaryLockTtlSeconds))) leadershipLost = true;
          } catch (error) {
            heartbeatError = error;
          }
        });
      },
      Math.max(1, Math.floor((primaryLockTtlSeconds * 1000) / 3)),
    );
    heartbeat.unref?.();
    try {
      const reaped = await stateStore.reapExpiredIdleWithMinTtl(
        poolName,
        new Date(),
        this.#o.acquireMinRemainingTtlSeconds,
      );
      await this.#killSandboxIds(reaped.discardedAliveSandboxIds ?? []);
      const maxIdle = (await stateStore.getMaxIdle(poolName)) ?? this.#o.maxIdle;
      const idleCount = (await stateStore.snapshotCounters(poolName)).idleCount;
      if (idleCount > maxIdle) {
        // Shrink: at most warmupConcurrency per tick, oldest first.
        const excess = Math.min(idleCount - maxIdle, this.#o.warmupConcurrency);
        for (let i = 0; i < excess; i += 1) {
          const sandboxId = await stateStore.tryTakeIdle(poolName);
          if (!sandboxId) break;
          await this.#killSandboxIds([sandboxId]);
        }
      } else {
        const createCount = Math.min(maxIdle - idleCount, this.#o.warmupCreateQps, this.#o.warmupConcurrency);
        if (createCount <= 0) {
          if (!(await stateStore.renewPrimaryLock(poolName, ownerId, primaryLockTtlSeconds))) leadershipLost = true;
        } else {
          const results = await Promise.allSettled(Array.from({ length: createCount }, () => this.#warmOne()));
          const failures = results.filter((r) => r.status === 'rejected').map((r) => r.reason);
          for (const error of failures) {
            this.#o.logger?.warn?.('pool warmup sandbox creation failed', { poolName, error });
          }
          const destroyed = failures.find((e) => e instanceof PoolDestroyedException);
          if (destroyed) throw destroyed;
          if (failures.length === createCount) throw failures[0];
        }
      }
    } finally {
      clearInterval(heartbeat);
      await heartbeatChain;
    }
    if (heartbeatError) throw heartbeatError;
    if (leadershipLost) this.#o.logger?.warn?.('pool lost primary ownership during reconcile', { poolName });
    return 'done';
  }

  /** Creates, readies, prepares and commits one idle sandbox (killed on any failure). */
  async #warmOne() {
    const o = this.#o;
    const signal = this.#abort?.signal;
    this.#inFlight += 1;
    let sandbox;
    let committed = false;
    try {
      sandbox = await this.#createSandbox(PooledSandboxCreateReason.WARMUP, signal);
      if (!o.warmupSkipHealthCheck) {
        if (o.warmupHealthCheckInitialDelayMillis > 0) await sleep(o.warmupHealthCheckInitialDelayMillis, signal);
        await this.#waitUntilHealthy(
          sandbox,
          o.warmupHealthCheck,
          o.warmupReadyTimeoutSeconds,
          o.warmupHealthCheckPollingIntervalMillis,
          signal,
        );
      }
      if (o.warmupSandboxPreparer) {
        await o.warmupSandboxPreparer(sandbox);
        if (o.warmupPostPrepareHealthCheck) {
          await this.#waitUntilHealthy(
            sandbox,
            o.warmupPostPrepareHealthCheck,
            o.warmupPostPrepareHealthCheckTimeoutSeconds,
            o.warmupHealthCheckPollingIntervalMillis,
            signal,
          );
        }
      }
      await sandbox.renew(o.idleTimeoutSeconds);
      const stillPrimary = await o.stateStore.renewPrimaryLock(o.poolName, o.ownerId, o.primaryLockTtlSeconds);
      const mayCommit =
        this.#lifecycle === PoolLifecycleState.RUNNING ||
        (this.#lifecycle === PoolLifecycleState.DRAINING && this.#allowCommitWhileDraining);
      if (!stillPrimary || !mayCommit) {
        await killAndClose(sandbox);
        return;
      }
      await o.stateStore.putIdle(o.poolName, String(sandbox.id));
      committed = true;
      await sandbox.close().catch((error) => {
        o.logger?.warn?.('failed to close pooled sandbox client', { sandboxId: String(sandbox.id), error });
      });
    } catch (cause) {
      if (sandbox && !committed) await killAndClose(sandbox);
      throw cause;
    } finally {
      this.#inFlight -= 1;
    }
  }

  async #createSandbox(reason, signal) {
    const o = this.#o;
    const warmup = reason === PooledSandboxCreateReason.WARMUP;
    if (o.sandboxCreator) {
      return await o.sandboxCreator({
        poolName: o.poolName,
        ownerId: o.ownerId,
        idleTimeoutSeconds: o.idleTimeoutSeconds,
        reason,
        readyTimeoutSeconds: warmup ? o.warmupReadyTimeoutSeconds : o.acquireReadyTimeoutSeconds,
        healthCheckPollingIntervalMillis: warmup
          ? o.warmupHealthCheckPollingIntervalMillis
          : o.acquireHealthCheckPollingIntervalMillis,
        skipHealthCheck: true,
        healthCheck: warmup ? o.warmupHealthCheck : o.acquireHealthCheck,
        connectionConfig: o.connectionConfig,
        createConnectionConfig: o.connectionConfig,
        creationSpec: o.creationSpec,
        signal,
      });
    }
    signal?.throwIfAborted();
    return await this.#backend.create({
      ...o.creationSpec,
      connectionConfig: o.connectionConfig,
      timeoutSeconds: o.idleTimeoutSeconds,
      skipHealthCheck: true,
    });
  }

  async #waitUntilHealthy(sandbox, healthCheck, timeoutSeconds, pollingIntervalMillis, signal) {
    const deadline = Date.now() + timeoutSeconds * 1000;
    let attempts = 0;
    let lastError;
    while (Date.now() < deadline) {
      signal?.throwIfAborted();
      attempts += 1;
      let healthy = false;
      try {
        healthy = healthCheck ? await healthCheck(sandbox) : await sandbox.isHealthy();
      } catch (error) {
        lastError = error;
      }
      if (healthy) return;
      await sleep(Math.min(pollingIntervalMillis, Math.max(1, deadline - Date.now())), signal);
    }
    throw new SandboxReadyTimeoutException({
      message: `Sandbox health check timed out after ${timeoutSeconds}s (${attempts} attempts).`,
      cause: lastError,
    });
  }

  #killLater(sandboxIds) {
    if (sandboxIds.length > 0) this.#killSandboxIds(sandboxIds).catch(() => undefined);
  }

  async #killSandboxIds(sandboxIds) {
    if (sandboxIds.length === 0) return;
    this.#inFlight += 1;
    let manager = this.#manager;
    const own = !manager;
    try {
      if (own) {
        try {
          manager = this.#backend.manager({ connectionConfig: this.#o.connectionConfig });
        } catch (error) {
          this.#o.logger?.warn?.('failed to create manager for pooled sandbox cleanup', { error });
          return;
        }
      }
      for (const sandboxId of sandboxIds) {
        try {
          await manager.killSandbox(sandboxId);
        } catch (error) {
          this.#o.logger?.warn?.('failed to kill pooled sandbox', { sandboxId, error });
        }
      }
    } finally {
      if (own) await manager?.close().catch(() => undefined);
      this.#inFlight -= 1;
    }
  }

  #recordSuccess() {
    this.#failureCount = 0;
    this.#lastError = undefined;
    this.#backoffUntilMs = 0;
    this.#health = PoolHealthState.HEALTHY;
  }

  #recordFailure(error) {
    this.#failureCount += 1;
    this.#lastError = message(error);
    if (this.#failureCount >= this.#o.degradedThreshold) {
      this.#health = PoolHealthState.DEGRADED;
      const backoffSeconds = Math.min(
        BACKOFF_MAX_SECONDS,
        BACKOFF_BASE_SECONDS * 2 ** (this.#failureCount - this.#o.degradedThreshold),
      );
      this.#backoffUntilMs = Date.now() + backoffSeconds * 1000;
    }
    this.#o.logger?.warn?.('pool reconcile failed', {
      poolName: this.#o.poolName,
      error,
      failureCount: this.#failureCount,
    });
  }

  async #storeCall(operation, fn) {
    try {
      return await fn();
    } catch (cause) {
      if (cause instanceof PoolStateStoreUnavailableException || cause instanceof PoolDestroyedException) throw cause;
      throw new PoolStateStoreUnavailableException(operation, cause);
    }
  }
}

async function killAndClose(sandbox) {
  await sandbox.kill().catch(() => undefined);
  await sandbox.close().catch(() => undefined);
}

// ---------------------------------------------------------------------------------
// SandboxPoolManager

/** Administrative operations on a shared pool namespace (destroy). */
class SandboxPoolManager {
  #stateStore;
  #connectionConfig;
  #ownerId;
  #logger;
  #backend;

  constructor(options) {
    if (options == null || typeof options !== 'object') throw bad('options are required');
    if (options.stateStore == null || typeof options.stateStore.beginDestroy !== 'function') {
      throw bad('stateStore is required and must support destroy (getDestroyState, beginDestroy, ...)');
    }
    if (options.ownerId !== undefined && (typeof options.ownerId !== 'string' || !options.ownerId.trim())) {
      throw bad('ownerId must not be blank');
    }
    this.#backend = options[BACKEND] ?? realBackend();
    if (options.adapterFactory != null) require('./factory.cjs').checkAdapterFactory(options.adapterFactory);
    this.#stateStore = options.stateStore;
    this.#connectionConfig = this.#backend.config(options.connectionConfig);
    this.#ownerId = options.ownerId?.trim() ?? randomId('pool-manager');
    this.#logger = options.logger;
  }

  static create(options) {
    return new SandboxPoolManager(options);
  }

  /**
   * FORCE-destroys a pool namespace: fences it (no more warmup commits, lock grabs or
   * setting writes by any pool of that name), kills its idle sandboxes, clears its state
   * and leaves a DESTROYED tombstone (tombstoneTtlSeconds; null = forever).
   */
  async destroy(poolName, options = {}) {
    requireName(poolName, 'poolName');
    const strategy = options.strategy ?? PoolDestroyStrategy.FORCE;
    if (strategy !== PoolDestroyStrategy.FORCE) throw bad('Only FORCE destroy is supported');
    const drainTimeoutSeconds = options.drainTimeoutSeconds ?? DEFAULT_DRAIN_TIMEOUT_SECONDS;
    const tombstoneTtlSeconds =
      options.tombstoneTtlSeconds === undefined ? DEFAULT_TOMBSTONE_TTL_SECONDS : options.tombstoneTtlSeconds;
    requireNonNegative(drainTimeoutSeconds, 'drainTimeoutSeconds');
    if (tombstoneTtlSeconds != null) requirePositive(tombstoneTtlSeconds, 'tombstoneTtlSeconds');
    const store = this.#stateStore;
    const storeCall = async (operation, fn) => {
      try {
        return await fn();
      } catch (cause) {
        if (cause instanceof PoolDestroyedException || cause instanceof PoolStateStoreUnavailableException) throw cause;
        throw new PoolStateStoreUnavailableException(operation, cause);
      }
    };
    const destroyed = { poolName, state: PoolDestroyState.DESTROYED, drainedIdleCount: 0, killedIdleCount: 0, persistentStateCleared: false };

    if ((await storeCall('getDestroyState', () => store.getDestroyState(poolName))) === PoolDestroyState.DESTROYED) {
      return destroyed;
    }
    const manager = this.#backend.manager({ connectionConfig: this.#connectionConfig });
    let drainedIdleCount = 0;
    let killedIdleCount = 0;
    try {
      try {
        await storeCall('beginDestroy', () => store.beginDestroy(poolName, this.#ownerId));
      } catch (error) {
        if (error instanceof PoolDestroyedException) return destroyed;
        throw error;
      }
      const deadline = drainTimeoutSeconds > 0 ? Date.now() + drainTimeoutSeconds * 1000 : undefined;
      for (;;) {
        if (deadline !== undefined && Date.now() >= deadline) throw new PoolDestroyIncompleteException(poolName);
        const sandboxId = await storeCall('tryTakeIdle', () => store.tryTakeIdle(poolName));
        if (!sandboxId) break;
        drainedIdleCount += 1;
        try {
          await killWithin(manager, sandboxId, poolName, deadline);
          killedIdleCount += 1;
        } catch (error) {
          if (error instanceof PoolDestroyIncompleteException) throw error;
          this.#logger?.warn?.('pool destroy failed to kill idle sandbox', { poolName, sandboxId, error });
        }
      }
      try {
        await store.clearPoolState(poolName);
        await store.markDestroyed(poolName, this.#ownerId, tombstoneTtlSeconds);
      } catch (error) {
        throw new PoolDestroyIncompleteException(poolName, error);
      }
      return {
        poolName,
        state: PoolDestroyState.DESTROYED,
        drainedIdleCount,
        killedIdleCount,
        persistentStateCleared: true,
      };
    } finally {
      await manager.close().catch(() => undefined);
    }
  }
}

async function killWithin(manager, sandboxId, poolName, deadline) {
  if (deadline === undefined) {
    await manager.killSandbox(sandboxId);
    return;
  }
  const remaining = deadline - Date.now();
  if (remaining <= 0) throw new PoolDestroyIncompleteException(poolName);
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new PoolDestroyIncompleteException(poolName)), remaining);
  });
  try {
    await Promise.race([manager.killSandbox(sandboxId), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

module.exports = {
  AcquirePolicy,
  PoolLifecycleState,
  PoolState,
  PoolHealthState,
  PoolDestroyState,
  PoolDestroyStrategy,
  PooledSandboxCreateReason,
  InMemoryPoolStateStore,
  SandboxPool,
  SandboxPoolManager,
  BACKEND,
};
