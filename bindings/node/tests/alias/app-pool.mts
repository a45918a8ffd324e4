// Type-checked against the installed package (tests/alias/run.sh): the pool and ./pool-redis.
import { SandboxPool, type PoolSnapshot } from "@alibaba-group/opensandbox";
import { RedisPoolStateStore, type RedisPoolClient } from "@alibaba-group/opensandbox/pool-redis";

export async function poolUser(client: RedisPoolClient): Promise<PoolSnapshot> {
  const pool = SandboxPool.create({
    poolName: "typed",
    maxIdle: 2,
    connectionConfig: {},
    creationSpec: { image: "python:3.11" },
    stateStore: new RedisPoolStateStore({ client }),
  });
  await pool.start();
  return pool.snapshot();
}
