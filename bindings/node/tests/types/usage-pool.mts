// Type-checked by `make test-node` (tsc --strict): the client-side pool and the
// ./pool-redis entry as the official package types them (code written for it, unchanged).
import {
  AcquirePolicy,
  ConnectionConfig,
  InMemoryPoolStateStore,
  PoolDestroyState,
  PoolDestroyStrategy,
  PoolEmptyException,
  PoolLifecycleState,
  PoolState,
  PooledSandboxCreateReason,
  Sandbox,
  SandboxError,
  SandboxPool,
  SandboxPoolManager,
  type IdleEntry,
  type PoolDestroyResult,
  type PoolSnapshot,
  type PoolStateStore,
  type PooledSandboxCreateContext,
  type SandboxAcquireOptions,
  type SandboxPoolOptions,
} from '../../index.js';
import { RedisPoolStateStore, type RedisPoolClient } from '../../pool-redis.js';

export async function officialPool(client: RedisPoolClient): Promise<void> {
  const stateStore: PoolStateStore = new RedisPoolStateStore({ client, keyPrefix: RedisPoolStateStore.DEFAULT_KEY_PREFIX });
  const options: SandboxPoolOptions = {
    poolName: 'workers',
    maxIdle: 4,
    connectionConfig: new ConnectionConfig({ domain: 'localhost:8080' }),
    creationSpec: { image: 'python:3.11', metadata: { team: 'a' } },
    stateStore,
    warmupCreateQps: 5,
    warmupConcurrency: 2,
    idleTimeoutSeconds: 3600,
    warmupSandboxPreparer: async (sandbox: Sandbox) => {
      await sandbox.commands.run('pip install requests');
    },
    warmupHealthCheck: (sandbox) => sandbox.isHealthy(),
    logger: { warn: (message, fields) => console.warn(message, fields) },
  };
  const pool = SandboxPool.create(options);
  await pool.start();
  const acquire: SandboxAcquireOptions = { policy: AcquirePolicy.FAIL_FAST, sandboxTimeoutSeconds: 600 };
  try {
    const sandbox: Sandbox = await pool.acquire(acquire);
    await sandbox.kill();
  } catch (e) {
    if (e instanceof PoolEmptyException && e.error.code === SandboxError.POOL_EMPTY) return;
    throw e;
  }
  await pool.resize(2);
  const snap: PoolSnapshot = await pool.snapshot();
  const healthy: boolean = snap.state === PoolState.HEALTHY && snap.lifecycleState === PoolLifecycleState.RUNNING;
  const entries: IdleEntry[] = await pool.snapshotIdleEntries();
  void [healthy, entries[0]?.expiresAt.getTime()];
  const released: number = await pool.releaseAllIdle();
  void released;
  await pool.shutdown(true);

  const custom = SandboxPool.create({
    poolName: 'custom',
    maxIdle: 1,
    connectionConfig: { domain: 'localhost:8080' },
    stateStore: new InMemoryPoolStateStore(),
    sandboxCreator: async (ctx: PooledSandboxCreateContext) => {
      void (ctx.reason === PooledSandboxCreateReason.WARMUP);
      return Sandbox.create({ image: 'python:3.11', connectionConfig: ctx.connectionConfig, timeoutSeconds: ctx.idleTimeoutSeconds });
    },
  });
  await custom.close();

  const manager = SandboxPoolManager.create({ stateStore, connectionConfig: { domain: 'localhost:8080' } });
  const result: PoolDestroyResult = await manager.destroy('workers', {
    strategy: PoolDestroyStrategy.FORCE,
    drainTimeoutSeconds: 10,
    tombstoneTtlSeconds: null,
  });
  void (result.state === PoolDestroyState.DESTROYED && result.persistentStateCleared);
}
