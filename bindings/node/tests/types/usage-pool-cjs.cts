// Type-checked by `make test-node`: CommonJS consumers of the pool and ./pool-redis.
import { SandboxPool, InMemoryPoolStateStore, type PoolSnapshot } from '../../lib/index.cjs';
import { RedisPoolStateStore } from '../../lib/pool-redis.cjs';

export async function cjsPool(client: { sendCommand(args: string[]): Promise<unknown> }): Promise<PoolSnapshot> {
  const pool = SandboxPool.create({
    poolName: 'cjs',
    maxIdle: 1,
    connectionConfig: {},
    creationSpec: { image: 'python:3.11' },
    stateStore: client ? new RedisPoolStateStore({ client }) : new InMemoryPoolStateStore(),
  });
  await pool.start();
  return pool.snapshot();
}
