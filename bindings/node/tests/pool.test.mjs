// The client-side pool without a server: SandboxPool over a fake sandbox backend (the
// symbol-keyed test hook of lib/pool.cjs), InMemoryPoolStateStore, SandboxPoolManager.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  AcquirePolicy,
  InMemoryPoolStateStore,
  InvalidArgumentException,
  PoolAcquireFailedException,
  PoolDestroyState,
  PoolDestroyedException,
  PoolEmptyException,
  PoolLifecycleState,
  PoolNotRunningException,
  PoolState,
  PoolStateStoreUnavailableException,
  PooledSandboxCreateReason,
  SandboxError,
  SandboxException,
  SandboxPool,
  SandboxPoolManager,
} from '../index.js';

const BACKEND = Symbol.for('opensandbox-node.pool.backend');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Sandboxes as ids in a set; `unhealthy` ids never pass a health check. */
function fakeBackend() {
  const b = {
    n: 0,
    alive: new Set(),
    killed: [],
    renewals: [],
    createOpts: [],
    unhealthy: new Set(),
    failCreate: null,
    config: (c) => c,
    async create(opts) {
      b.createOpts.push(opts);
      if (b.failCreate) throw new Error(b.failCreate);
      const id = `sbx-${++b.n}`;
      b.alive.add(id);
      return sandbox(id);
    },
    async connect({ sandboxId }) {
      if (!b.alive.has(sandboxId)) throw new Error(`sandbox ${sandboxId} not found`);
      return sandbox(sandboxId);
    },
    manager: () => ({
      async killSandbox(id) {
        b.alive.delete(id);
        b.killed.push(id);
      },
      async close() {},
    }),
  };
  function sandbox(id) {
    return {
      id,
      isHealthy: async () => b.alive.has(id) && !b.unhealthy.has(id),
      renew: async (s) => {
        b.renewals.push([id, s]);
        return { expiresAt: new Date(Date.now() + s * 1000) };
      },
      kill: async () => {
        b.alive.delete(id);
        b.killed.push(id);
      },
      close: async () => {},
    };
  }
  return b;
}

function makePool(backend, over = {}) {
  return SandboxPool.create({
    poolName: over.poolName ?? `p-${Math.random().toString(16).slice(2)}`,
    maxIdle: 2,
    connectionConfig: { domain: 'fake:1' },
    creationSpec: { image: 'python:3.11', metadata: { k: 'v' } },
    reconcileIntervalSeconds: 0.02,
    acquireHealthCheckPollingIntervalMillis: 5,
    warmupHealthCheckPollingIntervalMillis: 5,
    acquireReadyTimeoutSeconds: 0.1,
    [BACKEND]: backend,
    ...over,
  });
}

async function until(cond, what, ms = 3000) {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

const idle = async (pool) => (await pool.snapshot()).idleCount;

test('pool options: official validation, InvalidArgumentException', () => {
  const b = fakeBackend();
  const cases = [
    { poolName: '  ' },
    { maxIdle: -1 },
    { maxIdle: 1.5 },
    { creationSpec: {} },
    { creationSpec: { image: 'a', snapshotId: 's' } },
    { idleTimeoutSeconds: 0 },
    { idleTimeoutSeconds: 10, acquireMinRemainingTtlSeconds: 10 },
    { warmupConcurrency: 0 },
    { warmupCreateQps: 1.5 },
    { maxAcquireRetries: 0 },
    { degradedThreshold: 0 },
    { emptyBehavior: 'SOMETIMES' },
    { warmupHealthCheck: 'yes' },
  ];
  for (const c of cases) {
    assert.throws(() => makePool(b, c), InvalidArgumentException, JSON.stringify(c));
  }
  // A sandboxCreator makes the creation spec optional.
  assert.ok(makePool(b, { creationSpec: undefined, sandboxCreator: async () => ({}) }));
  assert.ok(SandboxPool.inMemoryStateStore() instanceof InMemoryPoolStateStore);
});

test('pool errors: official classes, codes and messages', () => {
  const e = new PoolEmptyException('p');
  assert.ok(e instanceof SandboxException && e instanceof Error);
  assert.equal(e.name, 'PoolEmptyException');
  assert.equal(e.error.code, SandboxError.POOL_EMPTY);
  assert.equal(e.message, "Sandbox pool 'p' has no idle sandbox available");
  const n = new PoolNotRunningException('p', 'STOPPED');
  assert.equal(n.error.code, 'POOL_NOT_RUNNING');
  assert.match(n.message, /state=STOPPED/);
  const s = new PoolStateStoreUnavailableException('putIdle', new Error('down'));
  assert.equal(s.error.code, 'POOL_STATE_STORE_UNAVAILABLE');
  assert.equal(s.cause.message, 'down');
  assert.equal(new PoolDestroyedException('p', 'DESTROYED').error.code, 'POOL_DESTROYED');
  assert.equal(new PoolAcquireFailedException('p').error.code, 'POOL_ACQUIRE_FAILED');
});

test('warmup fills the pool; acquire hands out the oldest, renews it, and the pool refills', async () => {
  const b = fakeBackend();
  const pool = makePool(b);
  await assert.rejects(pool.acquire(), PoolNotRunningException);
  await pool.start();
  try {
    await until(async () => (await idle(pool)) === 2, 'warmup');
    const entries = await pool.snapshotIdleEntries();
    assert.equal(entries.length, 2);
    assert.ok(entries[0].expiresAt instanceof Date && entries[0].expiresAt > new Date());
    // Warmups were created with the spec, the idle timeout as server timeout, no health wait.
    assert.equal(b.createOpts[0].image, 'python:3.11');
    assert.deepEqual(b.createOpts[0].metadata, { k: 'v' });
    assert.equal(b.createOpts[0].timeoutSeconds, 24 * 60 * 60);
    assert.equal(b.createOpts[0].skipHealthCheck, true);

    const sbx = await pool.acquire({ sandboxTimeoutSeconds: 120, policy: AcquirePolicy.FAIL_FAST });
    assert.equal(sbx.id, entries[0].sandboxId);
    assert.deepEqual(b.renewals.at(-1), [sbx.id, 120]);
    await until(async () => (await idle(pool)) === 2, 'refill');
    assert.ok(!(await pool.snapshotIdleEntries()).some((e) => e.sandboxId === sbx.id));
    const snap = await pool.snapshot();
    assert.equal(snap.state, PoolState.HEALTHY);
    assert.equal(snap.lifecycleState, PoolLifecycleState.RUNNING);
    assert.equal(snap.maxIdle, 2);
    assert.equal(snap.backoffActive, false);
  } finally {
    await pool.shutdown(false);
  }
  assert.equal((await pool.snapshot()).lifecycleState, PoolLifecycleState.STOPPED);
  await assert.rejects(pool.acquire(), PoolNotRunningException);
});

test('acquire policies on an empty pool: FAIL_FAST, RETRY_NEXT_IDLE → PoolEmpty; DIRECT_CREATE creates', async () => {
  const b = fakeBackend();
  const pool = makePool(b, { maxIdle: 0 });
  await pool.start();
  try {
    await assert.rejects(pool.acquire({ policy: AcquirePolicy.FAIL_FAST }), PoolEmptyException);
    await assert.rejects(pool.acquire({ policy: AcquirePolicy.RETRY_NEXT_IDLE }), PoolEmptyException);
    const sbx = await pool.acquire();
    assert.equal(sbx.id, 'sbx-1');
    assert.equal(b.createOpts.length, 1);
    await assert.rejects(pool.acquire({ policy: 'NOPE' }), InvalidArgumentException);
    await assert.rejects(pool.acquire({ minRemainingTtlSeconds: -1 }), InvalidArgumentException);
  } finally {
    await pool.shutdown();
  }
});

test('unusable idle candidates: FAIL_FAST fails on the first, RETRY_NEXT_IDLE tries maxAcquireRetries, THEN_CREATE creates', async () => {
  const b = fakeBackend();
  const store = new InMemoryPoolStateStore();
  const name = 'retries';
  // Another instance holds the primary lock: this pool's reconcile leaves the idle set alone.
  await store.tryAcquirePrimaryLock(name, 'other-instance', 60);
  const pool = makePool(b, { poolName: name, maxIdle: 0, stateStore: store, maxAcquireRetries: 2 });
  await pool.start();
  try {
    // Four idle ids the backend does not know (killed behind the pool's back).
    for (const id of ['gone-1', 'gone-2', 'gone-3', 'gone-4']) await store.putIdle(name, id);
    await assert.rejects(pool.acquire({ policy: AcquirePolicy.FAIL_FAST }), PoolAcquireFailedException);
    assert.equal((await store.snapshotCounters(name)).idleCount, 3);
    await assert.rejects(pool.acquire({ policy: AcquirePolicy.RETRY_NEXT_IDLE }), PoolAcquireFailedException);
    assert.equal((await store.snapshotCounters(name)).idleCount, 1);
    const sbx = await pool.acquire({ policy: AcquirePolicy.RETRY_NEXT_IDLE_THEN_CREATE });
    assert.equal(sbx.id, 'sbx-1');
    assert.equal((await store.snapshotCounters(name)).idleCount, 0);
    // Failed candidates are killed (best effort).
    await until(() => b.killed.includes('gone-4'), 'kill of unusable candidates');
    // An unhealthy one fails the health check; skipHealthCheck hands it out anyway.
    b.alive.add('sick');
    b.unhealthy.add('sick');
    await store.putIdle(name, 'sick');
    await assert.rejects(pool.acquire({ policy: AcquirePolicy.FAIL_FAST }), PoolAcquireFailedException);
    b.alive.add('sick2');
    b.unhealthy.add('sick2');
    await store.putIdle(name, 'sick2');
    assert.equal((await pool.acquire({ policy: AcquirePolicy.FAIL_FAST, skipHealthCheck: true })).id, 'sick2');
  } finally {
    await pool.shutdown();
  }
});

test('a failing state store: FAIL_FAST raises PoolStateStoreUnavailable, DIRECT_CREATE falls back', async () => {
  const b = fakeBackend();
  const store = new InMemoryPoolStateStore();
  const pool = makePool(b, { maxIdle: 0, stateStore: store });
  await pool.start();
  try {
    store.tryTakeIdleWithMinTtl = async () => {
      throw new Error('redis down');
    };
    store.getDestroyState = async () => {
      throw new Error('redis down');
    };
    await assert.rejects(pool.acquire({ policy: AcquirePolicy.FAIL_FAST }), PoolStateStoreUnavailableException);
    await assert.rejects(pool.acquire({ policy: AcquirePolicy.RETRY_NEXT_IDLE }), PoolStateStoreUnavailableException);
    assert.equal((await pool.acquire()).id, 'sbx-1');
    assert.equal((await pool.acquire({ policy: AcquirePolicy.RETRY_NEXT_IDLE_THEN_CREATE })).id, 'sbx-2');
    store.snapshotCounters = async () => {
      throw new Error('redis down');
    };
    await assert.rejects(pool.snapshot(), PoolStateStoreUnavailableException);
    await assert.rejects(pool.releaseAllIdle(), PoolStateStoreUnavailableException);
  } finally {
    await pool.shutdown();
  }
  const broken = new InMemoryPoolStateStore();
  broken.setMaxIdle = async () => {
    throw new Error('down');
  };
  const p2 = makePool(b, { stateStore: broken });
  await assert.rejects(p2.start(), PoolStateStoreUnavailableException);
  assert.equal((await p2.snapshot()).lifecycleState, PoolLifecycleState.STOPPED);
});

test('failing warmups: DEGRADED after degradedThreshold, backoff, lastError; recovery is HEALTHY', async () => {
  const b = fakeBackend();
  b.failCreate = 'quota exceeded';
  const warnings = [];
  const pool = makePool(b, { degradedThreshold: 2, logger: { warn: (m) => warnings.push(m) } });
  await pool.start();
  try {
    await until(async () => (await pool.snapshot()).state === PoolState.DEGRADED, 'DEGRADED');
    const snap = await pool.snapshot();
    assert.equal(snap.failureCount, 2);
    assert.equal(snap.backoffActive, true);
    assert.equal(snap.lastError, 'quota exceeded');
    assert.equal(snap.idleCount, 0);
    assert.ok(warnings.includes('pool reconcile failed'));
    // While backing off no more creates are tried.
    const tries = b.createOpts.length;
    await sleep(100);
    assert.equal(b.createOpts.length, tries);
    // acquire still works (direct create) and a success ends the degraded state.
    b.failCreate = null;
    await pool.acquire();
    await pool.resize(1);
  } finally {
    await pool.shutdown(false);
  }
});

test('only the primary lock holder warms: two pools of one name share the store', async () => {
  const store = new InMemoryPoolStateStore();
  const b1 = fakeBackend();
  const b2 = fakeBackend();
  const p1 = makePool(b1, { poolName: 'shared', stateStore: store, maxIdle: 3, warmupConcurrency: 3 });
  await p1.start();
  const p2 = makePool(b2, { poolName: 'shared', stateStore: store, maxIdle: 3, warmupConcurrency: 3 });
  await p2.start();
  try {
    await until(async () => (await idle(p1)) === 3, 'warmup');
    await sleep(60);
    assert.equal(b1.createOpts.length, 3);
    assert.equal(b2.createOpts.length, 0);
    // The follower hands out the leader's sandboxes (connect through its own backend).
    b2.alive = b1.alive;
    const s = await p2.acquire({ policy: AcquirePolicy.FAIL_FAST });
    assert.equal(s.id, 'sbx-1');
    // The leader stops: its lock is released and the follower takes over the refill.
    await p1.shutdown();
    await until(async () => (await idle(p2)) === 3, 'follower refill');
    assert.ok(b2.createOpts.length >= 1);
  } finally {
    await p1.shutdown(false);
    await p2.shutdown(false);
  }
});

test('resize shrinks (kills the excess) and grows; releaseAllIdle kills the idle ones', async () => {
  const b = fakeBackend();
  const pool = makePool(b, { maxIdle: 3 });
  await pool.start();
  try {
    await until(async () => (await idle(pool)) === 3, 'warmup');
    await pool.resize(1);
    await until(async () => (await idle(pool)) === 1, 'shrink');
    assert.equal(b.killed.length, 2);
    assert.equal((await pool.snapshot()).maxIdle, 1);
    await pool.resize(2);
    await until(async () => (await idle(pool)) === 2, 'grow');
    await assert.rejects(pool.resize(-1), InvalidArgumentException);
    await pool.resize(0);
    await until(async () => (await idle(pool)) === 0, 'resize to 0');
    await pool.resize(2);
    await until(async () => (await idle(pool)) === 2, 'grow again');
    await pool.shutdown();
    const killedBefore = b.killed.length;
    assert.equal(await pool.releaseAllIdle(), 2);
    assert.equal(b.killed.length, killedBefore + 2);
    assert.equal(await idle(pool), 0);
  } finally {
    await pool.shutdown(false);
  }
});

test('idle TTL: entries below the acquire minimum are reaped, killed and replaced', async () => {
  const b = fakeBackend();
  const pool = makePool(b, { maxIdle: 1, idleTimeoutSeconds: 0.3, acquireMinRemainingTtlSeconds: 0.15 });
  await pool.start();
  try {
    await until(async () => (await idle(pool)) === 1, 'warmup');
    const first = (await pool.snapshotIdleEntries())[0].sandboxId;
    await until(() => b.killed.includes(first), 'reap of the aging idle sandbox');
    await until(async () => (await pool.snapshotIdleEntries()).some((e) => e.sandboxId !== first), 'replacement');
  } finally {
    await pool.shutdown(false);
  }
});

test('warmup hooks: health check, preparer, post-prepare check; sandboxCreator gets the context', async () => {
  const b = fakeBackend();
  const seen = [];
  const contexts = [];
  const pool = makePool(b, {
    maxIdle: 1,
    creationSpec: undefined,
    sandboxCreator: async (ctx) => {
      contexts.push(ctx);
      return b.create({ fromCreator: true });
    },
    warmupHealthCheck: async (s) => {
      seen.push(`health:${s.id}`);
      return true;
    },
    warmupSandboxPreparer: async (s) => {
      seen.push(`prepare:${s.id}`);
    },
    warmupPostPrepareHealthCheck: (s) => {
      seen.push(`post:${s.id}`);
      return true;
    },
  });
  await pool.start();
  try {
    await until(async () => (await idle(pool)) === 1, 'warmup');
    assert.deepEqual(seen, ['health:sbx-1', 'prepare:sbx-1', 'post:sbx-1']);
    const ctx = contexts[0];
    assert.equal(ctx.reason, PooledSandboxCreateReason.WARMUP);
    assert.equal(ctx.poolName, pool.poolName);
    assert.equal(ctx.ownerId, pool.ownerId);
    assert.equal(ctx.idleTimeoutSeconds, 86400);
    assert.equal(ctx.skipHealthCheck, true);
    assert.ok(ctx.signal instanceof AbortSignal);
    await pool.acquire({ policy: AcquirePolicy.FAIL_FAST });
    await pool.acquire({ policy: AcquirePolicy.DIRECT_CREATE });
    assert.ok(contexts.some((c) => c.reason === PooledSandboxCreateReason.DIRECT_CREATE));
  } finally {
    await pool.shutdown(false);
  }
  // A preparer that throws: the sandbox is killed, never idle.
  const b2 = fakeBackend();
  const p2 = makePool(b2, {
    maxIdle: 1,
    warmupSandboxPreparer: async () => {
      throw new Error('prep failed');
    },
  });
  await p2.start();
  try {
    await until(() => b2.killed.includes('sbx-1'), 'kill of the unprepared sandbox');
    assert.equal(await idle(p2), 0);
    assert.equal((await p2.snapshot()).lastError, 'prep failed');
  } finally {
    await p2.shutdown(false);
  }
});

test('SandboxPoolManager.destroy: kills idle, fences the namespace, tombstone; the running pool stops', async () => {
  const b = fakeBackend();
  const store = new InMemoryPoolStateStore();
  const pool = makePool(b, { poolName: 'doomed', stateStore: store, maxIdle: 2 });
  await pool.start();
  await until(async () => (await idle(pool)) === 2, 'warmup');
  const mgr = SandboxPoolManager.create({ stateStore: store, connectionConfig: {}, [BACKEND]: b });
  assert.throws(() => new SandboxPoolManager({ stateStore: {}, connectionConfig: {} }), InvalidArgumentException);
  await assert.rejects(mgr.destroy('doomed', { strategy: 'GRACEFUL' }), InvalidArgumentException);
  const res = await mgr.destroy('doomed');
  assert.equal(res.poolName, 'doomed');
  assert.equal(res.state, PoolDestroyState.DESTROYED);
  assert.equal(res.killedIdleCount, 2);
  assert.equal(res.drainedIdleCount, 2);
  assert.equal(res.persistentStateCleared, true);
  assert.equal(await store.getDestroyState('doomed'), PoolDestroyState.DESTROYED);
  await assert.rejects(store.putIdle('doomed', 'x'), PoolDestroyedException);
  assert.equal(await store.tryAcquirePrimaryLock('doomed', 'o', 5), false);
  await until(async () => (await pool.snapshot()).lifecycleState === PoolLifecycleState.STOPPED, 'pool stop');
  // A new pool of that name cannot start; a second destroy is a no-op.
  const again = makePool(b, { poolName: 'doomed', stateStore: store });
  await assert.rejects(again.start(), PoolDestroyedException);
  const res2 = await mgr.destroy('doomed');
  assert.equal(res2.persistentStateCleared, false);
  assert.equal(res2.killedIdleCount, 0);
  // A tombstone with a TTL lapses: the name is free again.
  const store2 = new InMemoryPoolStateStore();
  const mgr2 = new SandboxPoolManager({ stateStore: store2, connectionConfig: {}, [BACKEND]: b });
  await mgr2.destroy('brief', { tombstoneTtlSeconds: 0.05 });
  assert.equal(await store2.getDestroyState('brief'), PoolDestroyState.DESTROYED);
  await sleep(80);
  assert.equal(await store2.getDestroyState('brief'), PoolDestroyState.ACTIVE);
});

test('InMemoryPoolStateStore: FIFO, idempotent put, min-TTL take, reap, lock ownership', async () => {
  const s = new InMemoryPoolStateStore();
  assert.equal(await s.getMaxIdle('p'), undefined);
  await s.setIdleEntryTtl('p', 0.2);
  await s.putIdle('p', 'a');
  await s.putIdle('p', 'b');
  await s.putIdle('p', 'a');
  assert.deepEqual((await s.snapshotIdleEntries('p')).map((e) => e.sandboxId), ['a', 'b']);
  assert.equal(await s.tryTakeIdle('p'), 'a');
  // b has < 1 s left: a 1 s minimum skips it (reported alive), leaving nothing.
  assert.deepEqual(await s.tryTakeIdleWithMinTtl('p', 1), { discardedAliveSandboxIds: ['b'] });
  await s.putIdle('p', 'c');
  await s.removeIdle('p', 'c');
  assert.equal((await s.snapshotCounters('p')).idleCount, 0);
  await s.putIdle('p', 'd');
  assert.deepEqual(await s.reapExpiredIdleWithMinTtl('p', new Date(), 5), { discardedAliveSandboxIds: ['d'] });
  await s.putIdle('p', 'e');
  await sleep(250);
  assert.equal((await s.snapshotCounters('p')).idleCount, 0);
  assert.equal(await s.tryTakeIdle('p'), undefined);
  await assert.rejects(s.putIdle('p', ' '), InvalidArgumentException);
  await assert.rejects(s.setMaxIdle('p', -1), InvalidArgumentException);

  assert.equal(await s.tryAcquirePrimaryLock('p', 'o1', 0.1), true);
  assert.equal(await s.tryAcquirePrimaryLock('p', 'o2', 0.1), false);
  assert.equal(await s.renewPrimaryLock('p', 'o2', 0.1), false);
  assert.equal(await s.renewPrimaryLock('p', 'o1', 0.1), true);
  await s.releasePrimaryLock('p', 'o2');
  assert.equal(await s.tryAcquirePrimaryLock('p', 'o2', 0.1), false);
  await sleep(120);
  assert.equal(await s.renewPrimaryLock('p', 'o1', 0.1), false);
  assert.equal(await s.tryAcquirePrimaryLock('p', 'o2', 0.1), true);
});
