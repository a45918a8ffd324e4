// RedisPoolStateStore (./pool-redis) against a real redis-server on a random port, through
// node-redis (`redis` from npm, installed by `make setup-node-tools` into .work/node/tools).
// Skipped, saying why, only when redis-server or the client is missing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AcquirePolicy,
  InvalidArgumentException,
  PoolDestroyState,
  PoolDestroyedException,
  PoolLifecycleState,
  PoolStateStoreUnavailableException,
  SandboxPool,
  SandboxPoolManager,
} from '../index.js';
import { RedisPoolStateStore } from '../pool-redis.js';

const BACKEND = Symbol.for('opensandbox-node.pool.backend');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function loadRedisClient() {
  const places = [new URL('../../../.work/node/tools/package.json', import.meta.url), import.meta.url];
  for (const place of places) {
    try {
      return createRequire(place)('redis');
    } catch {
      // next place
    }
  }
  return null;
}
const redisModule = loadRedisClient();
const haveServer = spawnSync('redis-server', ['--version']).status === 0;
const skip = !haveServer
  ? 'redis-server is not installed (apt-get install redis-server)'
  : !redisModule
    ? 'the npm package `redis` is missing (make setup-node-tools installs it into .work/node/tools)'
    : false;

let server;
let dir;
let client;

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

before(async () => {
  if (skip) return;
  const port = await freePort();
  dir = mkdtempSync(join(tmpdir(), 'osb-redis-'));
  server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
    stdio: 'ignore',
  });
  client = redisModule.createClient({ url: `redis://127.0.0.1:${port}` });
  client.on('error', () => {});
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      await client.connect();
      break;
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await sleep(50);
    }
  }
});

after(async () => {
  await client?.quit().catch(() => {});
  server?.kill();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function fakeBackend() {
  const b = {
    n: 0,
    alive: new Set(),
    killed: [],
    config: (c) => c,
    async create() {
      const id = `r-${process.pid}-${++b.n}`;
      b.alive.add(id);
      return sandbox(id);
    },
    async connect({ sandboxId }) {
      if (!b.alive.has(sandboxId)) throw new Error('not found');
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
  const sandbox = (id) => ({
    id,
    isHealthy: async () => b.alive.has(id),
    renew: async () => ({ expiresAt: new Date() }),
    kill: async () => {
      b.alive.delete(id);
      b.killed.push(id);
    },
    close: async () => {},
  });
  return b;
}

async function until(cond, what, ms = 5000) {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

test('constructor: a client with sendCommand is required', { skip }, () => {
  assert.throws(() => new RedisPoolStateStore({}), InvalidArgumentException);
  assert.throws(() => new RedisPoolStateStore({ client: {} }), InvalidArgumentException);
  assert.equal(RedisPoolStateStore.DEFAULT_KEY_PREFIX, 'opensandbox:pool');
  assert.equal(new RedisPoolStateStore({ client }).keyPrefix, 'opensandbox:pool');
});

test('key layout: the official SDKs\' (base64url pool name in a hash tag)', { skip }, async () => {
  const store = new RedisPoolStateStore({ client, keyPrefix: 'layout' });
  const name = 'pool/α?';
  await store.setMaxIdle(name, 3);
  await store.setIdleEntryTtl(name, 60);
  await store.putIdle(name, 'sbx-a');
  const base = 'layout:{cG9vbC_OsT8}:';
  assert.deepEqual((await client.keys('layout:*')).sort(), [
    `${base}idle:expires`,
    `${base}idle:list`,
    `${base}idleTtlMillis`,
    `${base}maxIdle`,
  ]);
  assert.equal(await client.get(`${base}maxIdle`), '3');
  assert.equal(await client.get(`${base}idleTtlMillis`), '60000');
  assert.deepEqual(await client.lRange(`${base}idle:list`, 0, -1), ['sbx-a']);
  const exp = Number(await client.hGet(`${base}idle:expires`, 'sbx-a'));
  assert.ok(Math.abs(exp - (Date.now() + 60000)) < 5000, `expiry ${exp}`);
  // An entry written by another language's store (same layout) is taken here.
  await client.rPush(`${base}idle:list`, 'from-python');
  await client.hSet(`${base}idle:expires`, 'from-python', String(Date.now() + 600000));
  assert.equal(await store.tryTakeIdle(name), 'sbx-a');
  assert.equal(await store.tryTakeIdle(name), 'from-python');
});

test('idle entries: FIFO, idempotent put, min-TTL take, reap, snapshot', { skip }, async () => {
  const store = new RedisPoolStateStore({ client, keyPrefix: 'idle' });
  const p = 'p1';
  assert.equal(await store.getMaxIdle(p), undefined);
  assert.equal(await store.tryTakeIdle(p), undefined);
  await store.putIdle(p, 'a');
  await store.putIdle(p, 'b');
  await store.putIdle(p, 'a');
  assert.deepEqual((await store.snapshotIdleEntries(p)).map((e) => e.sandboxId), ['a', 'b']);
  assert.equal((await store.snapshotCounters(p)).idleCount, 2);
  // A 2-day minimum exceeds the default 24 h TTL: both are skipped and reported alive.
  assert.deepEqual(await store.tryTakeIdleWithMinTtl(p, 2 * 86400), { discardedAliveSandboxIds: ['a', 'b'] });
  await store.setIdleEntryTtl(p, 0.3);
  await store.putIdle(p, 'c');
  await store.putIdle(p, 'd');
  await store.removeIdle(p, 'd');
  assert.deepEqual(await store.reapExpiredIdleWithMinTtl(p, new Date(), 5), { discardedAliveSandboxIds: ['c'] });
  await store.putIdle(p, 'e');
  await sleep(350);
  assert.deepEqual(await store.reapExpiredIdleWithMinTtl(p, new Date(), 0), { discardedAliveSandboxIds: [] });
  assert.equal((await store.snapshotCounters(p)).idleCount, 0);
  await assert.rejects(store.putIdle(p, ' '), InvalidArgumentException);
  await assert.rejects(store.setMaxIdle(p, -2), InvalidArgumentException);
  await assert.rejects(store.tryTakeIdle(' '), InvalidArgumentException);
});

test('primary lock: one owner at a time, renew/release only by the owner, TTL', { skip }, async () => {
  const store = new RedisPoolStateStore({ client, keyPrefix: 'lock' });
  assert.equal(await store.tryAcquirePrimaryLock('p', 'o1', 0.2), true);
  assert.equal(await store.tryAcquirePrimaryLock('p', 'o1', 0.2), true);
  assert.equal(await store.tryAcquirePrimaryLock('p', 'o2', 0.2), false);
  assert.equal(await store.renewPrimaryLock('p', 'o2', 0.2), false);
  await store.releasePrimaryLock('p', 'o2');
  assert.equal(await client.get('lock:{cA}:lock'), 'o1');
  await sleep(250);
  assert.equal(await store.renewPrimaryLock('p', 'o1', 0.2), false);
  assert.equal(await store.tryAcquirePrimaryLock('p', 'o2', 5), true);
  await store.releasePrimaryLock('p', 'o2');
  assert.equal(await client.get('lock:{cA}:lock'), null);
});

test('destroy fencing and tombstone; an unreachable Redis is PoolStateStoreUnavailable', { skip }, async () => {
  const store = new RedisPoolStateStore({ client, keyPrefix: 'destroy' });
  await store.setMaxIdle('p', 1);
  await store.putIdle('p', 'x');
  assert.equal(await store.getDestroyState('p'), PoolDestroyState.ACTIVE);
  await store.beginDestroy('p', 'mgr');
  assert.equal(await store.getDestroyState('p'), PoolDestroyState.DESTROYING);
  await assert.rejects(store.putIdle('p', 'y'), PoolDestroyedException);
  await assert.rejects(store.setMaxIdle('p', 2), PoolDestroyedException);
  assert.equal(await store.tryAcquirePrimaryLock('p', 'o', 5), false);
  await store.clearPoolState('p');
  await store.markDestroyed('p', 'mgr', 0.2);
  assert.equal(await store.getDestroyState('p'), PoolDestroyState.DESTROYED);
  await assert.rejects(store.beginDestroy('p', 'mgr2'), PoolDestroyedException);
  assert.deepEqual((await client.keys('destroy:*')).sort(), ['destroy:{cA}:destroy:owner', 'destroy:{cA}:destroy:state']);
  await sleep(250);
  assert.equal(await store.getDestroyState('p'), PoolDestroyState.ACTIVE);

  const down = new RedisPoolStateStore({
    client: {
      sendCommand: async () => {
        throw new Error('ECONNREFUSED');
      },
    },
  });
  const err = await down.tryTakeIdle('p').catch((e) => e);
  assert.ok(err instanceof PoolStateStoreUnavailableException);
  assert.match(err.message, /tryTakeIdle poolName=p/);
  assert.equal(err.cause.message, 'ECONNREFUSED');
});

test('two pools of one name over Redis: one warms, the other hands out; manager destroy', { skip }, async () => {
  const store = new RedisPoolStateStore({ client, keyPrefix: 'pools' });
  const b = fakeBackend();
  const mk = () =>
    SandboxPool.create({
      poolName: 'shared',
      maxIdle: 2,
      connectionConfig: {},
      creationSpec: { image: 'python:3.11' },
      stateStore: store,
      reconcileIntervalSeconds: 0.02,
      warmupHealthCheckPollingIntervalMillis: 5,
      [BACKEND]: b,
    });
  const p1 = mk();
  const p2 = mk();
  await p1.start();
  await p2.start();
  try {
    await until(async () => (await p2.snapshot()).idleCount === 2, 'warmup');
    await sleep(60);
    assert.equal(b.n, 2);
    const s = await p2.acquire({ policy: AcquirePolicy.FAIL_FAST });
    assert.ok(b.alive.has(s.id));
    await until(async () => (await p1.snapshot()).idleCount === 2, 'refill');
    const res = await SandboxPoolManager.create({ stateStore: store, connectionConfig: {}, [BACKEND]: b }).destroy('shared');
    assert.equal(res.killedIdleCount, 2);
    assert.equal(res.persistentStateCleared, true);
    await until(
      async () =>
        (await p1.snapshot()).lifecycleState === PoolLifecycleState.STOPPED &&
        (await p2.snapshot()).lifecycleState === PoolLifecycleState.STOPPED,
      'pools stop after destroy',
    );
    assert.equal((await store.snapshotCounters('shared')).idleCount, 0);
    // Nothing warmed after the destroy stays alive: every created sandbox but the acquired one is killed.
    await sleep(60);
    assert.deepEqual([...b.alive], [s.id]);
  } finally {
    await p1.shutdown(false);
    await p2.shutdown(false);
  }
});
