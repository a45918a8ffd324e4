// Every op and argument key the public API sends exists in the op layer's manifest.
// No server: a spy stands in for the native session and records what each public
// method sends. Each recorded call is checked against the addon's opsManifest() (op
// name, top-level keys, JSON types, required keys) and replayed through a real native
// session pointed at a closed port: the op layer parses the arguments before it
// connects, so a misspelt key anywhere (nested entries too) fails with
// invalid_argument instead of a connection error. A last check scans lib/ for op
// names, so a call site this test never reached fails as well.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Readable } from 'node:stream';

const require = createRequire(import.meta.url);
const cjs = require('../lib/index.cjs');
const native = require('../lib/native.cjs');

const MANIFEST = new Map(native.opsManifest().ops.map((o) => [o.name, o]));
// Native methods that take an op's arguments without being called by op name.
const NATIVE_AS = { readBytes: 'files.read_bytes', readStream: 'download.open', watchMetrics: 'sandbox.get_metrics', upload: 'files.write_files' };
// Ops whose arguments name live handles: checked against the manifest only.
const HANDLE_OPS = new Set(['execution.next_batch', 'release']);

class Stop extends Error {}

const END = {
  type: 'end',
  ok: true,
  execution: {
    id: 'ex-1', exit_code: 0, stdout: ['hi'], stderr: [], stdout_timestamps: [1], stderr_timestamps: [],
    results: [], error: null, complete: { execution_time_ms: 1, timestamp: 2 }, execution_count: null,
  },
};
const CANNED = {
  'sandbox.create': { id: 'sb-1', handle: 1 },
  'sandbox.connect': { id: 'sb-1', handle: 1 },
  'sandbox.resume': { id: 'sb-1', handle: 1 },
  'sandbox.is_healthy': { healthy: true },
  'commands.create_session': { session_id: 's-1' },
  'commands.follow_logs': { handle: 5 },
  'isolation.create': { session_id: 'is-1', created_at: '2026-01-01T00:00:00Z' },
  'isolation.attach': { session_id: 'is-1', created_at: '2026-01-01T00:00:00Z' },
};

/** The `meta` records of a native batch (src/streams.rs EventBatch): [kind, timestamp, length]. */
function batchMeta(items) {
  const b = Buffer.alloc(13 * items.length);
  items.forEach(([kind, ts = 0, len = 0], i) => {
    b[13 * i] = kind;
    b.writeDoubleLE(ts, 13 * i + 1);
    b.writeUInt32LE(len, 13 * i + 9);
  });
  return b;
}

function spy() {
  const calls = [];
  const rec = (op, args) => calls.push([op, args]);
  const answer = async (op, args) => {
    rec(op, args);
    if (op in CANNED) return CANNED[op];
    throw new Stop(op);
  };
  const events = () => {
    let n = 0;
    return {
      next: async () => (n++ === 0 ? { meta: batchMeta([[0], [1, 1, 2], [0]]), text: 'hi', other: JSON.stringify([{ type: 'init', id: 'ex-1', timestamp: 1 }, END]), last: true } : null),
      close() {},
    };
  };
  const s = {
    calls,
    call: answer,
    release: () => true,
    readBytes: async (a) => { rec('readBytes', a); return Buffer.from('x'); },
    readStream: async (a) => { rec('readStream', a); return { next: async () => null, close() {} }; },
    watchMetrics: async (a) => { rec('watchMetrics', a); return { next: async () => null, close() {} }; },
    runStream: async (op, a) => { rec(op, a); return events(); },
    upload: (a, buffers) => {
      rec('upload', a);
      return { write: async () => true, end() {}, abort() {}, finish: async () => { assert.equal(buffers.length, a.entries.length); } };
    },
  };
  return s;
}

async function attempt(p) {
  try {
    const r = await p;
    if (r && typeof r[Symbol.asyncIterator] === 'function') for await (const _ of r) void _;
  } catch (e) {
    if (!(e instanceof Stop)) throw e;
  }
}

async function exercise(s) {
  const cfg = new cjs.ConnectionConfig({ domain: 'spy.invalid:1', apiKey: 'k' });
  cfg._nativeConfig = s;
  const sbx = await cjs.Sandbox.create({
    connectionConfig: cfg,
    image: { uri: 'python:3.11', auth: { username: 'u', password: 'p' } },
    platform: { os: 'linux', arch: 'amd64' },
    credentialProxy: { enabled: true },
    volumes: [
      { name: 'h', mountPath: '/h', readOnly: true, subPath: 's', host: { path: '/srv' } },
      { name: 'p', mountPath: '/p', pvc: { claimName: 'c', createIfNotExists: true, deleteOnSandboxTermination: false, storageClass: 'x', storage: '1Gi', accessModes: ['ReadWriteOnce'] } },
      { name: 'o', mountPath: '/o', ossfs: { bucket: 'b', endpoint: 'e', accessKeyId: 'i', accessKeySecret: 's', version: '2.0', options: ['ro'] } },
    ],
    entrypoint: ['sleep', 'infinity'],
    env: { A: '1' },
    metadata: { m: '1' },
    networkPolicy: { defaultAction: 'deny', egress: [{ action: 'allow', target: 'example.com' }] },
    extensions: { e: '1', n: 2 },
    secureAccess: true,
    resource: { cpu: '1' },
    resourceRequests: { cpu: '500m' },
    lifecycle: {
      preStart: { command: ['true'], timeoutSeconds: 5 },
      periodic: [{ name: 't', schedule: '@every 1s', command: ['true'], timeoutSeconds: 1 }],
    },
    timeoutSeconds: null,
    readyTimeoutSeconds: 10,
    healthCheckPollingInterval: 100,
    skipHealthCheck: true,
  });
  await cjs.Sandbox.create({ connectionConfig: cfg, snapshotId: 'snap-1', timeoutSeconds: 60 });
  await cjs.Sandbox.createFromTemplate('tpl_1', {
    connectionConfig: cfg, timeoutSeconds: 60, metadata: { a: '1' }, extensions: { e: '1' },
    networkPolicy: { defaultAction: 'deny', egress: [] }, readyTimeoutSeconds: 5, skipHealthCheck: true,
  });
  await cjs.Sandbox.connect({ connectionConfig: cfg, sandboxId: 'sb-1', readyTimeoutSeconds: 5, healthCheckPollingInterval: 50 });
  await cjs.Sandbox.resume({ connectionConfig: cfg, sandboxId: 'sb-1', skipHealthCheck: true });
  const handlers = { onStdout: () => {}, onInit: () => {}, skipAccumulation: true };
  const opts = { background: false, workingDirectory: '/', timeoutSeconds: 1.5, uid: 0, gid: 0, envs: { E: '1' } };
  const perm = [{ path: '/a', mode: 600, owner: 'u', group: 'g' }];
  const rep = [{ path: '/a', oldContent: 'x', newContent: 'y' }];
  for (const p of [
    () => sbx.getInfo(), () => sbx.isHealthy(), () => sbx.getMetrics(), () => sbx.pause(), () => sbx.kill(),
    () => sbx.renew(60), () => sbx.patchMetadata({ a: '1', b: null }), () => sbx.getEgressPolicy(),
    () => sbx.patchEgressRules([{ action: 'allow', target: 'example.com' }]), () => sbx.deleteEgressRules(['example.com']),
    () => sbx.getEndpoint(8080), () => sbx.getSignedEndpoint(8080, 1900000000), () => sbx.getEndpointUrl(8080),
    () => sbx.createSnapshot({ name: 'n' }), () => sbx.getDiagnosticLogs('lifecycle'), () => sbx.getDiagnosticEvents('lifecycle'),
    () => sbx.commands.run('echo hi'), () => sbx.commands.run('echo hi', opts, handlers),
    () => sbx.commands.run('sleep 1', { background: true }, { onEvent: () => {} }),
    () => sbx.commands.runStream('echo hi', opts), () => sbx.commands.interrupt('ex-1'),
    () => sbx.commands.getCommandStatus('ex-1'), () => sbx.commands.getBackgroundCommandLogs('ex-1', 2),
    () => sbx.commands.createSession({ workingDirectory: '/' }),
    () => sbx.commands.runInSession('s-1', 'pwd', { workingDirectory: '/', timeoutSeconds: 2 }, handlers),
    () => sbx.commands.runInSession('s-1', 'pwd', { timeoutSeconds: 2 }),
    () => sbx.commands.runInSessionStream('s-1', 'pwd', { timeoutSeconds: 2 }), () => sbx.commands.deleteSession('s-1'),
    () => sbx.files.getFileInfo(['/a']), () => sbx.files.search({ path: '/', pattern: '*' }),
    () => sbx.files.listDirectory({ path: '/', depth: 2 }), () => sbx.files.createDirectories(perm),
    () => sbx.files.deleteDirectories(['/d']), () => sbx.files.deleteFiles(['/a']),
    () => sbx.files.moveFiles([{ src: '/a', dest: '/b' }]), () => sbx.files.replaceContents(rep),
    () => sbx.files.replaceContentsDetailed(rep), () => sbx.files.setPermissions(perm),
    () => sbx.files.writeFiles([
      { path: '/a', data: 'text', mode: 644, owner: 'u', group: 'g' },
      { path: '/b', data: Buffer.from('b') },
      { path: '/c', data: Readable.from(['c']) },
    ]),
    () => sbx.files.writeFile('/x', 'x', { mode: 600 }),
    () => sbx.files.readFile('/a', { offset: 1, limit: 2 }), () => sbx.files.readFile('/a', { encoding: 'latin1', range: 'bytes=0-1' }),
    () => sbx.files.readBytes('/a', { range: 'bytes=0-1' }), () => sbx.files.readBytesStream('/a'),
    () => sbx.health.ping(), () => sbx.metrics.getMetrics(), () => sbx.metrics.watchMetrics(),
    () => sbx.pty.followLogs('ex-1', { cursor: 0 }),
    () => sbx.filesWithIdentity(1000, 1000).writeFiles([{ path: '/u', data: 'u' }, { path: '/s', data: Readable.from(['s']) }]),
    () => sbx.filesWithIdentity(1000, 1000).readFile('/u'), () => sbx.filesWithIdentity(1000, 1000).readBytesStream('/u'),
    () => sbx.filesWithIdentity(1000, 1000).setPermissions(perm),
    () => sbx.credentialVault.create({
      credentials: [{ name: 'c', source: { type: 'inline', value: 'v' } }],
      bindings: [{
        name: 'b', match: { hosts: ['h'], schemes: ['https'], ports: [443], methods: ['GET'], paths: ['/'] },
        auth: { type: 'customHeaders', headers: [{ name: 'x', credential: 'c' }], substitutions: [{ credential: 'c', placeholder: 'P', in: ['header'] }] },
      }],
    }),
    () => sbx.credentialVault.get(), () => sbx.credentialVault.delete(),
    () => sbx.credentialVault.patch({ expectedRevision: 1, credentials: { add: [], replace: [], delete: ['c'] }, bindings: { delete: ['b'] } }),
    () => sbx.credentialVault.listCredentials(), () => sbx.credentialVault.getCredential('c'),
    () => sbx.credentialVault.listBindings(), () => sbx.credentialVault.getBinding('b'),
    () => sbx.isolation.capabilities(), () => sbx.isolation.list(),
    () => sbx.isolation.create({
      workspace: { path: '/workspace', mode: 'overlay' }, overlays: [{ path: '/etc', mode: 'overlay', persist: false }],
      profile: 'strict', extra_writable: ['/x'], binds: [{ source: '/workspace/a', dest: '/a', readonly: true }],
      share_net: false, env_passthrough: { mode: 'allow', keys: ['A'] }, uid: 1000, gid: 1000, uid_mode: 'setpriv',
      idle_timeout_seconds: 60,
    }),
    async () => {
      const session = await sbx.isolation.attach('is-1');
      for (const q of [
        () => session.run('echo hi', { envs: { A: '1' }, timeout_seconds: 5 }, handlers), () => session.get(),
        () => session.runBackground('sleep 1', { envs: { A: '1' } }), () => session.runStatus('r-1'),
        () => session.runLogs('r-1', 3), () => session.files.readFile('/a'), () => session.files.deleteFiles(['/a']),
        () => session.files.writeFiles([{ path: '/a', data: 'a' }]), () => session.delete(),
      ]) await attempt(q());
    },
    () => sbx.sandboxes.createSandbox({
      image: { uri: 'python:3.11' }, entrypoint: ['sleep', 'infinity'], timeout: 60, resourceLimits: { cpu: '1' },
      resourceRequests: { cpu: '1' }, env: {}, metadata: {}, extensions: {}, secureAccess: false,
    }),
    () => sbx.sandboxes.getSandbox('sb-1'), () => sbx.sandboxes.listSandboxes({ states: ['Running'], pageSize: 2 }),
    () => sbx.sandboxes.patchSandboxMetadata('sb-1', { a: null }), () => sbx.sandboxes.deleteSandbox('sb-1'),
    () => sbx.sandboxes.pauseSandbox('sb-1'), () => sbx.sandboxes.resumeSandbox('sb-1'),
    () => sbx.sandboxes.renewSandboxExpiration('sb-1', { expiresAt: new Date(Date.now() + 60_000).toISOString() }),
    () => sbx.sandboxes.createSnapshot('sb-1', { name: 'n' }), () => sbx.sandboxes.getSnapshot('snap-1'),
    () => sbx.sandboxes.listSnapshots({ sandboxId: 'sb-1' }), () => sbx.sandboxes.deleteSnapshot('snap-1'),
    () => sbx.sandboxes.getSandboxEndpoint('sb-1', 8080, true), () => sbx.sandboxes.getSignedEndpoint('sb-1', 8080, 1900000000),
  ]) await attempt(p());
  const ci = await cjs.CodeInterpreter.create(sbx);
  for (const p of [
    () => ci.codes.createContext('python', { cwd: '/' }), () => ci.codes.getContext('ctx-1'),
    () => ci.codes.listContexts('python'), () => ci.codes.deleteContext('ctx-1'), () => ci.codes.deleteContexts('python'),
    () => ci.codes.run('print(1)'), () => ci.codes.run('1', { context: { id: 'ctx-1', language: 'python' }, handlers }),
    () => ci.codes.run('1', { language: 'javascript' }), () => ci.codes.runStream({ code: '1', language: 'python' }),
    () => ci.codes.interrupt('ctx-1'),
  ]) await attempt(p());
  const m = cjs.SandboxManager.create({ connectionConfig: cfg });
  for (const p of [
    () => m.listSandboxInfos({ states: ['Running'], metadata: { a: '1' }, page: 1, pageSize: 10 }),
    () => m.getSandboxInfo('sb-1'), () => m.patchSandboxMetadata('sb-1', { a: null }), () => m.killSandbox('sb-1'),
    () => m.pauseSandbox('sb-1'), () => m.resumeSandbox('sb-1'), () => m.renewSandbox('sb-1', 60),
    () => m.createSnapshot('sb-1', { name: 'n' }), () => m.getSnapshot('snap-1'),
    () => m.listSnapshots({ sandboxId: 'sb-1', states: ['Ready'], page: 1, pageSize: 5 }), () => m.deleteSnapshot('snap-1'),
    () => m.getEndpoint('sb-1', 8080), () => m.getDiagnosticLogs('sb-1', 'lifecycle'), () => m.getDiagnosticEvents('sb-1', 'lifecycle'),
    () => m.createTemplate({
      image: 'python:3.11', publish: 's3://x', resourceLimits: { cpu: '1' }, entrypoint: ['sleep', 'infinity'],
      env: { A: '1' }, metadata: { m: '1' }, readiness: { probe: 'cmd://true', warmupSeconds: 1 }, format: 'native',
    }),
    () => m.getTemplate('tpl_1'), () => m.listTemplates({ metadata: { m: '1' }, page: 1, pageSize: 5 }), () => m.deleteTemplate('tpl_1'),
  ]) await attempt(p());
  return s.calls;
}

const TYPES = {
  string: (v) => typeof v === 'string',
  int: (v) => Number.isInteger(v),
  number: (v) => typeof v === 'number',
  bool: (v) => typeof v === 'boolean',
  list: (v) => Array.isArray(v),
  object: (v) => v !== null && typeof v === 'object' && !Array.isArray(v),
  'string|int': (v) => typeof v === 'string' || Number.isInteger(v),
  'object|int': (v) => Number.isInteger(v) || (v !== null && typeof v === 'object' && !Array.isArray(v)),
};

let recorded;
const calls = async () => (recorded ??= await exercise(spy()));

test('every sent op and key is in the manifest', async () => {
  const problems = [];
  for (const [name, args] of await calls()) {
    const op = NATIVE_AS[name] ?? name;
    const spec = MANIFEST.get(op);
    if (!spec) {
      problems.push(`${op}: not an op of the manifest`);
      continue;
    }
    const fields = new Map(spec.args.map((f) => [f.name, f]));
    for (const [k, v] of Object.entries(args)) {
      const f = fields.get(k);
      if (!f) problems.push(`${op}: key ${k} is not in the manifest`);
      else if (v === null ? !f.nullable : TYPES[f.type] && !TYPES[f.type](v)) {
        problems.push(`${op}: ${k}=${JSON.stringify(v)} is not ${f.type}`);
      }
    }
    for (const f of spec.args) if (f.required && !(f.name in args)) problems.push(`${op}: required key ${f.name} missing`);
  }
  assert.deepEqual(problems, []);
});

test('the op layer parses every sent call', async () => {
  const real = new native.NativeConfig({ domain: '127.0.0.1:9', api_key: '', request_timeout_s: 2 });
  const seen = new Map();
  for (const [name, a] of await calls()) {
    const op = NATIVE_AS[name] ?? name;
    // The spy's sandbox handle means nothing to this session: name the sandbox by id.
    const args = typeof a.sandbox === 'number' ? { ...a, sandbox: 'sb-1' } : a;
    if (!HANDLE_OPS.has(op)) seen.set(JSON.stringify([name, args]), [name, op, args]);
  }
  const replay = async ([name, op, args]) => {
    try {
      if (name === 'upload') await real.upload(args, args.entries.map(() => Buffer.alloc(0))).finish();
      else if (name in NATIVE_AS) await real[name](args);
      else if (op.endsWith('.start') || op === 'commands.start_in_session') await real.runStream(op, args);
      else await real.call(op, args);
    } catch (e) {
      const p = JSON.parse(String(e.message).slice(4));
      if (p.kind === 'invalid_argument') return `${op} ${JSON.stringify(args)}: ${p.message}`;
    }
    return null;
  };
  const problems = (await Promise.all([...seen.values()].map(replay))).filter(Boolean);
  assert.deepEqual(problems, []);
});

test('every op named in lib/ was exercised', async () => {
  const re = /['"]((?:sandbox|manager|commands|code|files|metrics|execution|download|upload|config|isolation|credential_vault)\.[a-z_]+|release)['"]/g;
  const named = new Set();
  const dir = new URL('../lib/', import.meta.url);
  for (const f of readdirSync(dir)) {
    if (!f.endsWith('.cjs')) continue;
    for (const m of readFileSync(new URL(f, dir), 'utf8').matchAll(re)) named.add(m[1]);
  }
  assert.ok(named.size > 0);
  const sent = new Set((await calls()).map(([n]) => NATIVE_AS[n] ?? n));
  assert.deepEqual([...named].filter((n) => !MANIFEST.has(n)), [], 'op names the manifest lacks');
  assert.deepEqual([...named].filter((n) => !sent.has(n)).sort(), [], 'ops named in lib/ but not exercised');
});
