// No server needed: the public surface, its declarations, error decoding, config rules.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as esm from '../index.js';
import * as ci from '../code-interpreter.js';

const require = createRequire(import.meta.url);
const cjs = require('../lib/index.cjs');
const errors = require('../lib/errors.cjs');

test('ESM and CommonJS entries export the same values', () => {
  const esmKeys = Object.keys(esm).filter((k) => k !== 'default').sort();
  assert.deepEqual(esmKeys, Object.keys(cjs).sort());
  for (const k of esmKeys) assert.equal(esm[k], cjs[k], k);
  assert.equal(ci.CodeInterpreter, cjs.CodeInterpreter);
  assert.equal(ci.SupportedLanguages.PYTHON, 'python');
});

test('index.d.ts declares exactly the runtime values (drift check)', () => {
  const dts = readFileSync(new URL('../index.d.ts', import.meta.url), 'utf8');
  const declared = [...dts.matchAll(/^export declare (?:class|const|function|enum) (\w+)/gm)].map((m) => m[1]).sort();
  assert.deepEqual(declared, Object.keys(cjs).sort());
});

test('the official value exports are all present', () => {
  const official = [
    'ConnectionConfig', 'Sandbox', 'SandboxManager', 'ExecutionEventDispatcher', 'SandboxError',
    'SandboxException', 'SandboxApiException', 'SandboxInternalException', 'SandboxUnhealthyException',
    'SandboxReadyTimeoutException', 'InvalidArgumentException', 'DEFAULT_EXECD_PORT', 'DEFAULT_EGRESS_PORT',
    'DEFAULT_ENTRYPOINT', 'DEFAULT_RESOURCE_LIMITS', 'DEFAULT_TIMEOUT_SECONDS', 'DEFAULT_READY_TIMEOUT_SECONDS',
    'DEFAULT_HEALTH_CHECK_POLLING_INTERVAL_MILLIS', 'DEFAULT_REQUEST_TIMEOUT_SECONDS',
  ];
  for (const n of official) assert.ok(n in cjs, n);
  assert.equal(cjs.DEFAULT_EXECD_PORT, 44772);
  assert.equal(cjs.DEFAULT_EGRESS_PORT, 18080);
  assert.deepEqual(cjs.DEFAULT_ENTRYPOINT, ['tail', '-f', '/dev/null']);
  assert.deepEqual(cjs.DEFAULT_RESOURCE_LIMITS, { cpu: '1', memory: '2Gi' });
  assert.equal(cjs.DEFAULT_TIMEOUT_SECONDS, 600);
  assert.equal(cjs.DEFAULT_READY_TIMEOUT_SECONDS, 30);
  assert.equal(cjs.DEFAULT_HEALTH_CHECK_POLLING_INTERVAL_MILLIS, 200);
  assert.equal(cjs.DEFAULT_REQUEST_TIMEOUT_SECONDS, 30);
});

test('the pool exports: main entry and ./pool-redis, ESM and CommonJS alike', async () => {
  const pool = [
    'SandboxPool', 'SandboxPoolManager', 'InMemoryPoolStateStore', 'AcquirePolicy', 'PoolLifecycleState', 'PoolState',
    'PoolDestroyState', 'PoolDestroyStrategy', 'PooledSandboxCreateReason', 'PoolEmptyException',
    'PoolAcquireFailedException', 'PoolNotRunningException', 'PoolStateStoreUnavailableException',
    'PoolDestroyedException', 'PoolDestroyIncompleteException',
  ];
  for (const n of pool) assert.ok(n in cjs, n);
  assert.equal(cjs.AcquirePolicy.RETRY_NEXT_IDLE_THEN_CREATE, 'RETRY_NEXT_IDLE_THEN_CREATE');
  assert.ok(Object.isFrozen(cjs.PoolState));
  assert.equal(cjs.SandboxError.POOL_DESTROY_INCOMPLETE, 'POOL_DESTROY_INCOMPLETE');
  const redisEsm = await import('../pool-redis.js');
  const redisCjs = require('../lib/pool-redis.cjs');
  assert.equal(redisEsm.RedisPoolStateStore, redisCjs.RedisPoolStateStore);
  assert.deepEqual(Object.keys(redisCjs), ['RedisPoolStateStore']);
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  assert.equal(pkg.exports['./pool-redis'].require.default, './lib/pool-redis.cjs');
  assert.equal(pkg.peerDependenciesMeta.redis.optional, true);
});

test('ConnectionConfig: defaults, env fallback, scheme in the domain wins', () => {
  const saved = { d: process.env.OPEN_SANDBOX_DOMAIN, k: process.env.OPEN_SANDBOX_API_KEY };
  try {
    delete process.env.OPEN_SANDBOX_DOMAIN;
    delete process.env.OPEN_SANDBOX_API_KEY;
    const d = new cjs.ConnectionConfig();
    assert.equal(d.domain, 'localhost:8080');
    assert.equal(d.protocol, 'http');
    assert.equal(d.apiKey, undefined);
    assert.equal(d.requestTimeoutSeconds, 30);
    assert.equal(d.getBaseUrl(), 'http://localhost:8080/v1');
    process.env.OPEN_SANDBOX_DOMAIN = 'env.example:9';
    process.env.OPEN_SANDBOX_API_KEY = 'k-env';
    const e = new cjs.ConnectionConfig();
    assert.equal(e.domain, 'env.example:9');
    assert.equal(e.apiKey, 'k-env');
    assert.equal(e.headers['OPEN-SANDBOX-API-KEY'], 'k-env');
    const x = new cjs.ConnectionConfig({ domain: 'https://api.example/v1', protocol: 'http', apiKey: 'k' });
    assert.equal(x.protocol, 'https');
    assert.equal(x.domain, 'api.example');
    assert.equal(x.apiKey, 'k');
  } finally {
    if (saved.d === undefined) delete process.env.OPEN_SANDBOX_DOMAIN;
    else process.env.OPEN_SANDBOX_DOMAIN = saved.d;
    if (saved.k === undefined) delete process.env.OPEN_SANDBOX_API_KEY;
    else process.env.OPEN_SANDBOX_API_KEY = saved.k;
  }
});

test('ConnectionConfig: an invalid timeout is an InvalidArgumentException from the core', () => {
  const c = new cjs.ConnectionConfig({ domain: 'h:1', requestTimeoutSeconds: -1 });
  assert.throws(() => c._native(), (e) => e instanceof cjs.InvalidArgumentException && e.kind === 'invalid_argument');
});

test('ConnectionConfig: endpoint cache options reach the core; unsupported ones throw', () => {
  const d = new cjs.ConnectionConfig({ domain: 'h:1' });
  assert.deepEqual(d._endpointCacheArgs(), { endpoint_cache_ttl_s: 600, endpoint_cache_size: 1024 });
  const set = new cjs.ConnectionConfig({ domain: 'h:1', endpointCacheTtlMs: 5000, endpointCacheSize: 7 });
  assert.deepEqual(set._endpointCacheArgs(), { endpoint_cache_ttl_s: 5, endpoint_cache_size: 7 });
  assert.ok(set._native()); // the op layer takes the keys
  const off = new cjs.ConnectionConfig({ domain: 'h:1', endpointCacheTtlMs: 5000, endpointCacheDisabled: true });
  assert.deepEqual(off._endpointCacheArgs(), { endpoint_cache_ttl_s: 0, endpoint_cache_size: 0 });
  assert.ok(off._native());
  const isInvalid = (e) => e instanceof cjs.InvalidArgumentException && e.kind === 'invalid_argument';
  for (const bad of [{ endpointCacheTtlMs: -1 }, { endpointCacheSize: -1 }, { endpointCacheSize: 1.5 }]) {
    assert.throws(() => new cjs.ConnectionConfig({ domain: 'h:1', ...bad })._native(), isInvalid, JSON.stringify(bad));
  }
  assert.throws(() => new cjs.ConnectionConfig({ debug: true }), cjs.InvalidArgumentException);
  assert.throws(() => new cjs.ConnectionConfig({ enableTracing: true }), cjs.InvalidArgumentException);
  assert.equal(new cjs.ConnectionConfig({ debug: false, enableTracing: false }).debug, false);
});

test('native errors decode into the official classes with every field', () => {
  const enc = (p) => new Error(`\u0001OSB${JSON.stringify(p)}`);
  const api = errors.fromNative(
    enc({ kind: 'not_found', status: 404, code: 'SANDBOX::NOT_FOUND', requestId: 'r1', message: 'gone', body: '{"code":"SANDBOX::NOT_FOUND"}', operation: 'get_sandbox' }),
  );
  assert.ok(api instanceof cjs.SandboxApiException && api instanceof cjs.SandboxException && api instanceof Error);
  assert.equal(api.name, 'SandboxApiException');
  assert.equal(api.statusCode, 404);
  assert.equal(api.error.code, 'SANDBOX::NOT_FOUND');
  assert.equal(api.requestId, 'r1');
  assert.equal(api.message, 'gone');
  assert.deepEqual(api.rawBody, { code: 'SANDBOX::NOT_FOUND' });
  assert.equal(api.kind, 'not_found');
  assert.equal(api.operation, 'get_sandbox');
  const rt = errors.fromNative(enc({ kind: 'ready_timeout', message: 'slow' }));
  assert.ok(rt instanceof cjs.SandboxReadyTimeoutException);
  assert.equal(rt.error.code, 'READY_TIMEOUT');
  const ia = errors.fromNative(enc({ kind: 'invalid_argument', message: 'bad' }));
  assert.ok(ia instanceof cjs.InvalidArgumentException);
  assert.equal(ia.name, 'InvalidArgumentException');
  const internal = errors.fromNative(enc({ kind: 'internal', message: 'x' }));
  assert.ok(internal instanceof cjs.SandboxInternalException);
  const conn = errors.fromNative(enc({ kind: 'connection', message: 'refused' }));
  assert.ok(conn instanceof cjs.SandboxApiException);
  assert.equal(conn.statusCode, undefined);
  assert.equal(conn.kind, 'connection');
  const plain = new TypeError('not ours');
  assert.equal(errors.fromNative(plain), plain);
});

test('ExecutionEventDispatcher follows the official rules and awaits async handlers in order', async () => {
  const seen = [];
  const ex = { logs: { stdout: [], stderr: [] }, result: [] };
  const d = new cjs.ExecutionEventDispatcher(ex, {
    onInit: async (i) => { await new Promise((r) => setTimeout(r, 5)); seen.push(`init:${i.id}`); },
    onStdout: (m) => seen.push(`out:${m.text}`),
    onResult: (r) => seen.push(`res:${r.text}`),
    onError: (e) => seen.push(`err:${e.name}:${e.value}`),
    onExecutionComplete: (c) => seen.push(`done:${c.executionTimeMs}`),
  });
  await d.dispatch({ type: 'init', text: 'e1', timestamp: 1 });
  await d.dispatch({ type: 'stdout', text: 'hi', timestamp: 2 });
  await d.dispatch({ type: 'result', results: { 'text/plain': '42' }, timestamp: 3 });
  await d.dispatch({ type: 'execution_count', execution_count: 7, timestamp: 3 });
  await d.dispatch({ type: 'error', error: { ename: 'E', evalue: '3', traceback: ['t'] }, timestamp: 4 });
  await d.dispatch({ type: 'execution_complete', execution_time: 9, timestamp: 5 });
  assert.deepEqual(seen, ['init:e1', 'out:hi', 'res:42', 'err:E:3', 'done:9']);
  assert.equal(ex.id, 'e1');
  assert.equal(ex.executionCount, 7);
  assert.deepEqual(ex.logs.stdout, [{ text: 'hi', timestamp: 2, isError: false }]);
  assert.deepEqual(ex.error, { name: 'E', value: '3', timestamp: 4, traceback: ['t'] });
  assert.deepEqual(ex.complete, { timestamp: 5, executionTimeMs: 9 });
});

test('the native addon is the version of this package', () => {
  assert.equal(require('../lib/native.cjs').nativeVersion(), cjs.VERSION);
});

test('adapterFactory is refused rather than silently ignored', async () => {
  await assert.rejects(cjs.Sandbox.create({ image: 'x', adapterFactory: {} }), cjs.InvalidArgumentException);
});

test('ESM-first package: type module, import before require, types for both', () => {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  assert.equal(pkg.type, 'module');
  for (const [sub, base] of [['.', 'index'], ['./internal', 'internal'], ['./code-interpreter', 'code-interpreter']]) {
    const e = pkg.exports[sub];
    assert.deepEqual(Object.keys(e), ['import', 'require', 'default'], sub);
    assert.deepEqual(e.import, { types: `./${base}.d.ts`, default: `./${base}.js` });
    assert.deepEqual(e.require, { types: `./lib/${base}.d.cts`, default: `./lib/${base}.cjs` });
    for (const f of [e.import.types, e.import.default, e.require.types, e.require.default]) {
      assert.ok(pkg.files.some((p) => f.slice(2).startsWith(p)), `${f} is packed`);
    }
  }
});

test('the CommonJS declarations are generated from the ESM ones (not stale)', async () => {
  const { ENTRIES, dcts } = await import('../scripts/gen-dcts.mjs');
  for (const name of ENTRIES) {
    const committed = readFileSync(new URL(`../lib/${name}.d.cts`, import.meta.url), 'utf8');
    assert.equal(committed, dcts(name), `lib/${name}.d.cts is stale: run node scripts/gen-dcts.mjs`);
  }
});

test('./internal: the same values through import and require, adapters are the service classes', async () => {
  const esmInternal = await import('../internal.js');
  const cjsInternal = require('../lib/internal.cjs');
  assert.deepEqual(Object.keys(esmInternal).filter((k) => k !== 'default').sort(), Object.keys(cjsInternal).sort());
  for (const k of Object.keys(cjsInternal)) assert.equal(esmInternal[k], cjsInternal[k], k);
  assert.equal(cjsInternal.CommandsAdapter, cjs.ExecdCommands);
  assert.equal(cjsInternal.FilesystemAdapter, cjs.SandboxFiles);
  const dts = readFileSync(new URL('../internal.d.ts', import.meta.url), 'utf8');
  for (const k of Object.keys(cjsInternal)) assert.match(dts, new RegExp(`\\b${k}\\b`), k);
});

test('adapter factory: the default one gives the raw lifecycle service; execd/egress stacks and custom factories are refused', async () => {
  const f = cjs.createDefaultAdapterFactory();
  assert.ok(f instanceof cjs.DefaultAdapterFactory);
  const connectionConfig = new cjs.ConnectionConfig({ domain: 'h:1' });
  const { sandboxes } = f.createLifecycleStack({ connectionConfig, lifecycleBaseUrl: connectionConfig.getBaseUrl() });
  for (const m of ['createSandbox', 'getSandbox', 'listSandboxes', 'deleteSandbox', 'renewSandboxExpiration', 'getSandboxEndpoint']) {
    assert.equal(typeof sandboxes[m], 'function', m);
  }
  assert.throws(() => f.createLifecycleStack({ connectionConfig, lifecycleBaseUrl: 'http://other/v1' }), cjs.InvalidArgumentException);
  assert.throws(() => f.createExecdStack({ connectionConfig, execdBaseUrl: 'http://h' }), cjs.InvalidArgumentException);
  assert.throws(() => f.createEgressStack({ connectionConfig, egressBaseUrl: 'http://h' }), cjs.InvalidArgumentException);
  assert.throws(() => cjs.SandboxManager.create({ adapterFactory: { createLifecycleStack() {} } }), cjs.InvalidArgumentException);
  await assert.rejects(cjs.Sandbox.connect({ sandboxId: 'x', adapterFactory: {} }), cjs.InvalidArgumentException);
  await assert.rejects(
    cjs.Sandbox.createFromTemplate('tpl_1', { connectionConfig, timeoutSeconds: undefined }),
    cjs.InvalidArgumentException,
  );
  await assert.rejects(cjs.Sandbox.createFromTemplate(' ', { connectionConfig, timeoutSeconds: 60 }), cjs.InvalidArgumentException);
});

test('ConnectionConfig.fetch / sseFetch are usable fetch functions', async () => {
  const c = new cjs.ConnectionConfig({ domain: 'h:1', requestTimeoutSeconds: 0.2 });
  assert.equal(typeof c.fetch, 'function');
  assert.equal(c.sseFetch, fetch);
  // A blackhole address: the config's timeout ends the request.
  await assert.rejects(c.fetch('http://10.255.255.1:9/'), (e) => ['TimeoutError', 'TypeError'].includes(e.name));
});
