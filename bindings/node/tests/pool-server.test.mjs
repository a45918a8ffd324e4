// The pool against the reference server (OPEN_SANDBOX_DOMAIN / OPEN_SANDBOX_API_KEY, as
// `make test-node` sets them): real warmups, acquire + a command in the pooled sandbox,
// a sandbox killed behind the pool's back skipped by RETRY_NEXT_IDLE_THEN_CREATE, and
// SandboxPoolManager.destroy killing the idle ones.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  AcquirePolicy,
  InMemoryPoolStateStore,
  PoolDestroyedException,
  PoolLifecycleState,
  PoolNotRunningException,
  SandboxApiException,
  SandboxManager,
  SandboxPool,
  SandboxPoolManager,
} from '../index.js';

const skip = process.env.OPEN_SANDBOX_DOMAIN ? false : 'needs a server (OPEN_SANDBOX_DOMAIN)';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(cond, what, ms = 60_000) {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

test('SandboxPool against the server: warm, acquire, retry past a dead idle, destroy', { skip, timeout: 120_000 }, async () => {
  const store = new InMemoryPoolStateStore();
  const poolName = `node-it-${process.pid}`;
  const pool = SandboxPool.create({
    poolName,
    maxIdle: 2,
    warmupConcurrency: 2,
    connectionConfig: {},
    creationSpec: { image: 'python:3.11', metadata: { suite: 'node-pool' } },
    stateStore: store,
    idleTimeoutSeconds: 600,
    reconcileIntervalSeconds: 0.2,
  });
  const manager = SandboxManager.create();
  try {
    await pool.start();
    await until(async () => (await pool.snapshot()).idleCount === 2, 'warmup');
    const entries = await pool.snapshotIdleEntries();
    const info = await manager.getSandboxInfo(entries[0].sandboxId);
    assert.equal(info.metadata.suite, 'node-pool');

    const sbx = await pool.acquire({ policy: AcquirePolicy.FAIL_FAST, sandboxTimeoutSeconds: 300 });
    assert.equal(sbx.id, entries[0].sandboxId);
    const ex = await sbx.commands.run('echo pooled');
    assert.equal(ex.logs.stdout.map((m) => m.text).join(''), 'pooled');
    await sbx.kill();

    await manager.killSandbox(entries[1].sandboxId);
    const sbx2 = await pool.acquire({ policy: AcquirePolicy.RETRY_NEXT_IDLE_THEN_CREATE });
    assert.notEqual(sbx2.id, entries[1].sandboxId);
    assert.equal(await sbx2.isHealthy(), true);
    await sbx2.kill();

    await until(async () => (await pool.snapshot()).idleCount === 2, 'refill');
    const idle = (await pool.snapshotIdleEntries()).map((e) => e.sandboxId);
    const res = await SandboxPoolManager.create({ stateStore: store, connectionConfig: {} }).destroy(poolName);
    assert.equal(res.killedIdleCount, 2);
    for (const id of idle) {
      await assert.rejects(manager.getSandboxInfo(id), (e) => e instanceof SandboxApiException && e.statusCode === 404);
    }
    await until(async () => (await pool.snapshot()).lifecycleState === PoolLifecycleState.STOPPED, 'pool stop');
    const err = await pool.acquire().catch((e) => e);
    assert.ok(err instanceof PoolNotRunningException || err instanceof PoolDestroyedException, String(err));
  } finally {
    await pool.shutdown(false);
    await pool.releaseAllIdle().catch(() => {});
    await manager.close();
  }
});
