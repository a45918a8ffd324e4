// The official client-side pool, as its sources document it, from the package installed
// as `@alibaba-group/opensandbox` (tests/alias/run.sh), with the `./pool-redis` subpath.
import { AcquirePolicy, SandboxPool, SandboxPoolManager, InMemoryPoolStateStore } from "@alibaba-group/opensandbox";
import { RedisPoolStateStore } from "@alibaba-group/opensandbox/pool-redis";
import assert from "node:assert/strict";

const connectionConfig = { domain: process.env.OPEN_SANDBOX_DOMAIN, apiKey: process.env.OPEN_SANDBOX_API_KEY };
assert.equal(RedisPoolStateStore.DEFAULT_KEY_PREFIX, "opensandbox:pool");

const stateStore = new InMemoryPoolStateStore();
const pool = SandboxPool.create({
  poolName: "alias-pool",
  maxIdle: 1,
  connectionConfig,
  creationSpec: { image: "python:3.11" },
  stateStore,
});
await pool.start();
const deadline = Date.now() + 30_000;
while ((await pool.snapshot()).idleCount < 1) {
  assert.ok(Date.now() < deadline, "pool never warmed");
  await new Promise((r) => setTimeout(r, 50));
}
const sandbox = await pool.acquire({ policy: AcquirePolicy.FAIL_FAST, sandboxTimeoutSeconds: 300 });
const execution = await sandbox.commands.run("echo pooled");
assert.equal(execution.logs.stdout[0]?.text, "pooled");
await sandbox.kill();
await pool.shutdown();
const result = await SandboxPoolManager.create({ stateStore, connectionConfig }).destroy("alias-pool");
assert.equal(result.state, "DESTROYED");
console.log("alias pool: ok");
