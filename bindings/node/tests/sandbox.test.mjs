// Integration tests against a real server (OPEN_SANDBOX_DOMAIN / OPEN_SANDBOX_API_KEY,
// as `make test-node` sets them through scripts/with-server.sh).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { spawn } from 'node:child_process';
import { Readable } from 'node:stream';
import fs from 'node:fs';
import os from 'node:os';
import nodePath from 'node:path';
import {
  CodeInterpreter,
  ConnectionConfig,
  InvalidArgumentException,
  Sandbox,
  SandboxApiException,
  SandboxManager,
  SupportedLanguages,
} from '../index.js';

const haveServer = !!process.env.OPEN_SANDBOX_DOMAIN;
const skip = haveServer ? false : 'needs a server (OPEN_SANDBOX_DOMAIN)';
let sbx;

before(async () => {
  if (haveServer) sbx = await Sandbox.create({ image: 'python:3.11', metadata: { suite: 'node' } });
});
after(async () => {
  if (sbx) await sbx.kill();
});

const sha = (b) => createHash('sha256').update(b).digest('hex');

test('run: output, exit code, async handlers called in event order', { skip }, async () => {
  const seen = [];
  const ex = await sbx.commands.run('echo one; echo two >&2; echo three; exit 3', undefined, {
    onInit: async (i) => { await new Promise((r) => setTimeout(r, 10)); seen.push(`init:${!!i.id}`); },
    onStdout: async (m) => { await new Promise((r) => setTimeout(r, 5)); seen.push(`out:${m.text}`); },
    onStderr: (m) => seen.push(`err:${m.text}`),
    onError: (e) => seen.push(`error:${e.name}:${e.value}`),
  });
  assert.equal(ex.exitCode, 3);
  assert.deepEqual(ex.logs.stdout.map((m) => m.text), ['one', 'three']);
  assert.deepEqual(ex.logs.stderr.map((m) => m.text), ['two']);
  assert.equal(ex.error.name, 'CommandExecError');
  assert.equal(seen[0], 'init:true');
  assert.deepEqual(seen.filter((s) => s.startsWith('out:')), ['out:one', 'out:three']);
  assert.equal(seen.at(-1), 'error:CommandExecError:3');
  const uni = await sbx.commands.run("echo 'héllo wörld 😀'; echo ascii; echo 'ß' >&2");
  assert.deepEqual(uni.logs.stdout.map((m) => m.text), ['héllo wörld 😀', 'ascii']);
  assert.deepEqual(uni.logs.stderr.map((m) => m.text), ['ß']);
  const ok = await sbx.commands.run('true');
  assert.equal(ok.exitCode, 0);
  assert.ok(ok.complete && typeof ok.complete.executionTimeMs === 'number');
});

test('run without event handlers or signal (one native call) = the streamed run', { skip }, async () => {
  // run() without handlers that want events and without a signal is one
  // `commands.run` call; a signal takes the start + batches path. Same Execution.
  const cmd = "echo one; echo two >&2; echo 'héllo'; exit 3";
  const shape = (ex) => ({
    exitCode: ex.exitCode,
    stdout: ex.logs.stdout.map((m) => m.text),
    stderr: ex.logs.stderr.map((m) => m.text),
    stamps: ex.logs.stdout.every((m) => typeof m.timestamp === 'number'),
    error: ex.error && [ex.error.name, ex.error.value],
    id: typeof ex.id,
    complete: !!ex.complete,
  });
  const once = await sbx.commands.run(cmd);
  const streamed = await sbx.commands.run(cmd, undefined, undefined, new AbortController().signal);
  assert.deepEqual(shape(once), shape(streamed));
  assert.deepEqual(shape(once).stdout, ['one', 'héllo']);
  const skipped = await sbx.commands.run(cmd, undefined, { skipAccumulation: true });
  assert.deepEqual([skipped.exitCode, skipped.logs.stdout.length], [3, 0]);
  const bg = await sbx.commands.run('sleep 0.2', { background: true });
  assert.equal(bg.exitCode, undefined);
  assert.ok(bg.id);
  const sid = await sbx.commands.createSession({ workingDirectory: '/tmp' });
  const a = await sbx.commands.runInSession(sid, 'echo $PWD');
  const b = await sbx.commands.runInSession(sid, 'echo $PWD', {}, undefined, new AbortController().signal);
  assert.deepEqual(shape(a), shape(b));
  assert.deepEqual(a.logs.stdout.map((m) => m.text), ['/tmp']);
  await sbx.commands.deleteSession(sid);
});

test('runStream: official wire events as an async iterator; break closes it', { skip }, async () => {
  const types = [];
  for await (const ev of sbx.commands.runStream('echo a; echo b')) {
    types.push(ev.type);
    if (ev.type === 'init') assert.ok(ev.text);
  }
  assert.deepEqual(types, ['init', 'stdout', 'stdout', 'execution_complete']);
  for await (const ev of sbx.commands.runStream('for i in $(seq 1 100000); do echo $i; done')) {
    if (ev.type === 'stdout') break;
  }
  // the sandbox is still usable afterwards
  assert.equal((await sbx.commands.run('echo still')).logs.stdout[0].text, 'still');
});

test('AbortSignal cancels a running command promptly', { skip }, async () => {
  const ac = new AbortController();
  const t0 = Date.now();
  setTimeout(() => ac.abort(), 300);
  await assert.rejects(sbx.commands.run('sleep 30', undefined, undefined, ac.signal), (e) => e.name === 'AbortError');
  assert.ok(Date.now() - t0 < 5000, 'aborted within 5 s');
  const pre = new AbortController();
  pre.abort();
  await assert.rejects(sbx.commands.run('echo x', undefined, undefined, pre.signal), (e) => e.name === 'AbortError');
});

test('skipAccumulation streams 200k lines to the handler without keeping them', { skip }, async () => {
  let n = 0;
  let last = '';
  const ex = await sbx.commands.run('seq 1 200000', undefined, {
    skipAccumulation: true,
    onStdout: (m) => { n++; last = m.text; },
  });
  assert.equal(n, 200000);
  assert.equal(last, '200000');
  assert.equal(ex.logs.stdout.length, 0);
  assert.equal(ex.exitCode, 0);
});

test('writeFiles from every data type; readBytes / readBytesStream / readFile round trip', { skip }, async () => {
  const big = Buffer.alloc(3 * 1024 * 1024 + 17, 7);
  const entries = [
    { path: '/tmp/t/str.txt', data: 'héllo' },
    { path: '/tmp/t/buf.bin', data: big },
    { path: '/tmp/t/u8.bin', data: new Uint8Array([1, 2, 3]) },
    { path: '/tmp/t/ab.bin', data: new Uint8Array([4, 5]).buffer },
    { path: '/tmp/t/readable.txt', data: Readable.from(['a', 'b', Buffer.from('c')]) },
    { path: '/tmp/t/iter.txt', data: (async function* g() { yield new TextEncoder().encode('x'); yield 'yz'; })() },
    { path: '/tmp/t/web.txt', data: new Blob(['we', 'b']).stream() },
    { path: '/tmp/t/blob.txt', data: new Blob(['blob']), mode: 600 },
  ];
  await sbx.files.writeFiles(entries);
  assert.equal(await sbx.files.readFile('/tmp/t/str.txt'), 'héllo');
  assert.equal(sha(await sbx.files.readBytes('/tmp/t/buf.bin')), sha(big));
  assert.deepEqual([...(await sbx.files.readBytes('/tmp/t/u8.bin'))], [1, 2, 3]);
  assert.deepEqual([...(await sbx.files.readBytes('/tmp/t/ab.bin'))], [4, 5]);
  assert.equal(await sbx.files.readFile('/tmp/t/readable.txt'), 'abc');
  assert.equal(await sbx.files.readFile('/tmp/t/iter.txt'), 'xyz');
  assert.equal(await sbx.files.readFile('/tmp/t/web.txt'), 'web');
  assert.equal(await sbx.files.readFile('/tmp/t/blob.txt'), 'blob');
  const h = createHash('sha256');
  let size = 0;
  for await (const c of sbx.files.readBytesStream('/tmp/t/buf.bin')) {
    assert.ok(c instanceof Uint8Array);
    h.update(c);
    size += c.length;
  }
  assert.equal(size, big.length);
  assert.equal(h.digest('hex'), sha(big));
  assert.equal(Buffer.from(await sbx.files.readBytes('/tmp/t/str.txt', { range: 'bytes=1-2' })).length, 2);
  const info = await sbx.files.getFileInfo(['/tmp/t/blob.txt']);
  assert.equal(info['/tmp/t/blob.txt'].mode, 600);
  assert.equal(info['/tmp/t/blob.txt'].type, 'file');
  assert.ok(info['/tmp/t/blob.txt'].modifiedAt instanceof Date);
  const listed = await sbx.files.listDirectory({ path: '/tmp/t' });
  assert.ok(listed.some((e) => e.path.endsWith('iter.txt')));
});

test('in-memory data is sent from its own memory: views, a dropped Buffer, a failed request', { skip }, async () => {
  // The addon reads the Buffer itself (no copy), kept alive by its reference: a view
  // uploads exactly its bytes, and a Buffer nothing else refers to survives a GC.
  const backing = Buffer.alloc(5 * 1024 * 1024);
  for (let i = 0; i < backing.length; i++) backing[i] = i % 251;
  const view = backing.subarray(12345, 12345 + 4 * 1024 * 1024 + 3);
  const pending = sbx.files.writeFiles([
    { path: '/tmp/t/view.bin', data: view },
    { path: '/tmp/t/dropped.bin', data: Buffer.alloc(6 * 1024 * 1024, 5) },
  ]);
  if (global.gc) global.gc();
  for (let i = 0; i < 20; i++) Buffer.alloc(1024 * 1024, i); // garbage, so a GC may run
  await pending;
  assert.equal(sha(await sbx.files.readBytes('/tmp/t/view.bin')), sha(view));
  assert.equal(sha(await sbx.files.readBytes('/tmp/t/dropped.bin')), sha(Buffer.alloc(6 * 1024 * 1024, 5)));
  // A request that fails (the parent is a file) rejects; the Buffer is released after it.
  await assert.rejects(sbx.files.writeFiles([{ path: '/tmp/t/view.bin/child', data: view }]));
  assert.equal(sha(await sbx.files.readBytes('/tmp/t/view.bin')), sha(view));
});

test('an unread fs.ReadStream of a regular file is read by the addon; other streams are streamed', { skip }, async () => {
  const dir = fs.mkdtempSync(nodePath.join(os.tmpdir(), 'osb-up-'));
  try {
    const data = Buffer.alloc(3 * 1024 * 1024 + 5);
    for (let i = 0; i < data.length; i++) data[i] = (i * 7) % 256;
    const file = nodePath.join(dir, 'f.bin');
    fs.writeFileSync(file, data);
    // Whole, a start/end slice (end inclusive, as createReadStream's), mixed with a Buffer
    // and a stream in one request; each file stream ends destroyed, as read to its end.
    const whole = fs.createReadStream(file);
    const slice = fs.createReadStream(file, { start: 10, end: 1_000_009 });
    await sbx.files.writeFiles([
      { path: '/tmp/t/fs-whole.bin', data: whole },
      { path: '/tmp/t/fs-slice.bin', data: slice },
      { path: '/tmp/t/fs-buf.bin', data: Buffer.from('buf') },
      { path: '/tmp/t/fs-readable.txt', data: Readable.from(['r', 's']) },
    ]);
    assert.equal(sha(await sbx.files.readBytes('/tmp/t/fs-whole.bin')), sha(data));
    assert.equal(sha(await sbx.files.readBytes('/tmp/t/fs-slice.bin')), sha(data.subarray(10, 1_000_010)));
    assert.equal(await sbx.files.readFile('/tmp/t/fs-buf.bin'), 'buf');
    assert.equal(await sbx.files.readFile('/tmp/t/fs-readable.txt'), 'rs');
    assert.ok(whole.destroyed && slice.destroyed);
    // A subclass (its reads may differ) and a device go through JS as any stream.
    class Sub extends fs.ReadStream {}
    await sbx.files.writeFiles([
      { path: '/tmp/t/fs-sub.bin', data: new Sub(file) },
      { path: '/tmp/t/fs-null.bin', data: fs.createReadStream('/dev/null') },
    ]);
    assert.equal(sha(await sbx.files.readBytes('/tmp/t/fs-sub.bin')), sha(data));
    assert.equal((await sbx.files.readBytes('/tmp/t/fs-null.bin')).length, 0);
    // A failed request (the parent is a file) rejects and leaves the stream unread.
    const unread = fs.createReadStream(file);
    await assert.rejects(sbx.files.writeFiles([{ path: '/tmp/t/fs-whole.bin/child', data: unread }]));
    assert.equal(unread.destroyed, false);
    assert.equal(unread.bytesRead, 0);
    unread.destroy();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a failing upload stream rejects and leaves the client usable', { skip }, async () => {
  const bad = (async function* g() { yield 'partial'; throw new Error('source broke'); })();
  await assert.rejects(sbx.files.writeFiles([{ path: '/tmp/t/bad.txt', data: bad }]), /source broke/);
  assert.equal((await sbx.commands.run('echo ok')).exitCode, 0);
});

test('errors: official classes, status, server code, request id from X-Request-ID', { skip }, async () => {
  const m = SandboxManager.create({ connectionConfig: { headers: { 'X-Request-ID': 'node-req-1' } } });
  await assert.rejects(m.getSandboxInfo('does-not-exist'), (e) => {
    assert.ok(e instanceof SandboxApiException);
    assert.equal(e.statusCode, 404);
    assert.equal(e.requestId, 'node-req-1');
    assert.equal(e.kind, 'not_found');
    assert.ok(e.error.code);
    return true;
  });
  const bad = SandboxManager.create({ connectionConfig: new ConnectionConfig({ apiKey: 'wrong-key' }) });
  await assert.rejects(bad.listSandboxInfos(), (e) => e instanceof SandboxApiException && e.statusCode === 401);
  await assert.rejects(Sandbox.create({}), InvalidArgumentException);
  await assert.rejects(sbx.commands.run('   '), InvalidArgumentException);
  await assert.rejects(sbx.commands.runInSession('no-such-session', 'true'), (e) => e instanceof SandboxApiException && e.statusCode === 404);
  await assert.rejects(sbx.files.readFile('/tmp/nope/missing'), (e) => e instanceof SandboxApiException && e.statusCode === 404);
});

test('errors keep the raw response body; create passes volumes and credentialProxy', { skip }, async () => {
  const m = SandboxManager.create();
  await assert.rejects(m.getSandboxInfo('does-not-exist'), (e) => {
    assert.ok(e instanceof SandboxApiException);
    assert.equal(typeof e.rawBody, 'object');
    assert.equal(e.rawBody.code, e.error.code);
    assert.equal(typeof e.rawBody.message, 'string');
    return true;
  });
  // The server validates what reaches it: each rejection proves the option was sent.
  const create = (o) => Sandbox.create({ image: 'python:3.11', skipHealthCheck: true, ...o });
  await assert.rejects(create({ volumes: [{ name: 'v', mountPath: 'relative', host: { path: '/tmp' } }] }), (e) => {
    assert.ok(e instanceof SandboxApiException);
    assert.equal(e.statusCode, 400);
    assert.deepEqual(e.rawBody, { code: 'VOLUME::INVALID_MOUNT_PATH', message: e.rawBody.message });
    return true;
  });
  await assert.rejects(
    create({ volumes: [{ name: 'v', mountPath: '/v', pvc: { claimName: 'no-such-claim', createIfNotExists: false } }] }),
    (e) => {
      assert.ok(e instanceof SandboxApiException);
      assert.equal(e.rawBody.code, 'VOLUME::PVC_NOT_FOUND');
      return true;
    },
  );
  await assert.rejects(create({ credentialProxy: { enabled: true } }), (e) => {
    assert.ok(e instanceof SandboxApiException);
    assert.match(e.rawBody.message, /credentialProxy/);
    return true;
  });
  await assert.rejects(create({ platform: { os: 'windows', arch: 'amd64' } }), (e) => {
    assert.ok(e instanceof SandboxApiException);
    assert.match(e.rawBody.message, /windows/);
    return true;
  });
  // The core has no token field: a clear InvalidArgumentException, nothing sent.
  await assert.rejects(create({ image: { uri: 'python:3.11', auth: { token: 't' } } }), InvalidArgumentException);
});

test('getInfo returns platform and extensions', { skip }, async () => {
  const arch = process.arch === 'arm64' ? 'arm64' : 'amd64';
  const s = await Sandbox.create({
    image: { uri: 'python:3.11', auth: { username: 'u', password: 'p' } },
    platform: { os: 'linux', arch },
    extensions: { note: 'node-test' },
    metadata: { suite: 'node' },
  });
  try {
    const info = await s.getInfo();
    assert.deepEqual(info.platform, { os: 'linux', arch });
    assert.deepEqual(info.extensions, { note: 'node-test' });
    const listed = await s.sandboxes.getSandbox(s.id);
    assert.deepEqual(listed.platform, { os: 'linux', arch });
    assert.equal(listed.extensions.note, 'node-test');
  } finally {
    await s.kill();
  }
});

test('lifecycle: info, metadata, renew, list, endpoint, metrics, manager', { skip }, async () => {
  const info = await sbx.getInfo();
  assert.equal(info.id, sbx.id);
  assert.equal(info.platform, undefined);
  assert.equal(info.extensions, undefined);
  assert.equal(info.status.state, 'Running');
  assert.ok(info.createdAt instanceof Date && info.expiresAt instanceof Date);
  const r = await sbx.renew(1200);
  assert.ok(r.expiresAt instanceof Date && r.expiresAt > info.expiresAt);
  const p = await sbx.patchMetadata({ extra: 'yes' });
  assert.equal(p.metadata.extra, 'yes');
  const list = await sbx.sandboxes.listSandboxes({ metadata: { suite: 'node' } });
  assert.ok(list.items.some((i) => i.id === sbx.id));
  assert.equal(list.pagination.page, 1);
  const ep = await sbx.getEndpoint(44772);
  assert.ok(ep.endpoint.includes(`/sandboxes/${sbx.id}/proxy/44772`));
  assert.ok((await sbx.getEndpointUrl(44772)).startsWith('http://'));
  const mt = await sbx.getMetrics();
  assert.ok(mt.cpuCount > 0 && mt.memoryTotalMiB > 0);
  assert.equal(await sbx.isHealthy(), true);
  assert.equal(await sbx.health.ping(), true);
  const again = await Sandbox.connect({ sandboxId: sbx.id });
  assert.equal((await again.commands.run('echo c')).logs.stdout[0].text, 'c');
});

test('background command: status and logs', { skip }, async () => {
  const ex = await sbx.commands.run('echo bg; sleep 0.2', { background: true });
  assert.ok(ex.id);
  assert.equal(ex.exitCode, undefined);
  let st;
  for (let i = 0; i < 50; i++) {
    st = await sbx.commands.getCommandStatus(ex.id);
    if (!st.running) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(st.running, false);
  assert.equal(st.exitCode, 0);
  const logs = await sbx.commands.getBackgroundCommandLogs(ex.id);
  assert.match(logs.content, /bg/);
});

test('sessions keep state between runs', { skip }, async () => {
  const sid = await sbx.commands.createSession({ workingDirectory: '/tmp' });
  await sbx.commands.runInSession(sid, 'export X=42');
  const ex = await sbx.commands.runInSession(sid, 'echo $X; pwd');
  assert.deepEqual(ex.logs.stdout.map((m) => m.text), ['42', '/tmp']);
  await sbx.commands.deleteSession(sid);
});

test('code interpreter: contexts keep state; results and errors', { skip }, async () => {
  const ci = await CodeInterpreter.create(sbx);
  assert.equal(ci.id, sbx.id);
  const ctx = await ci.codes.createContext(SupportedLanguages.PYTHON);
  assert.ok(ctx.id);
  await ci.codes.run('x = 20', { context: ctx });
  const r = await ci.codes.run('x + 22', { context: ctx });
  assert.equal(r.result[0].text, '42');
  const e = await ci.codes.run('1/0', { context: ctx });
  assert.equal(e.error.name, 'ZeroDivisionError');
  const all = await ci.codes.listContexts(SupportedLanguages.PYTHON);
  assert.ok(all.some((c) => c.id === ctx.id));
  await ci.codes.deleteContext(ctx.id);
});

test('an idle client never keeps the process alive', { skip }, async () => {
  const child = spawn(process.execPath, [new URL('./idle_exit.mjs', import.meta.url).pathname], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const code = await new Promise((resolve) => {
    const t = setTimeout(() => { child.kill('SIGKILL'); resolve('timeout'); }, 30_000);
    child.on('exit', (c) => { clearTimeout(t); resolve(c); });
  });
  assert.equal(code, 0, `exit code ${code}; output: ${out}`);
  assert.match(out, /idle-exit: done/);
});

test('raw lifecycle service: createSandbox answers at once, official shapes, resourceRequests checked', { skip }, async () => {
  const raw = sbx.sandboxes;
  const created = await raw.createSandbox({
    image: { uri: 'python:3.11' },
    entrypoint: ['sleep', 'infinity'],
    timeout: 600,
    resourceLimits: { cpu: '1', memory: '512Mi' },
    resourceRequests: { cpu: '250m' },
    metadata: { suite: 'node-raw' },
  });
  try {
    assert.ok(created.createdAt instanceof Date && created.expiresAt instanceof Date);
    assert.deepEqual(created.entrypoint, ['sleep', 'infinity']);
    assert.equal((await raw.getSandbox(created.id)).metadata.suite, 'node-raw');
    const r = await raw.renewSandboxExpiration(created.id, { expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
    assert.ok(Math.abs(r.expiresAt.getTime() - (Date.now() + 3_600_000)) < 10_000);
    await assert.rejects(raw.renewSandboxExpiration(created.id, { expiresAt: 'soon' }), InvalidArgumentException);
  } finally {
    await raw.deleteSandbox(created.id);
  }
  await assert.rejects(
    Sandbox.create({ image: 'python:3.11', resourceRequests: { gpu: '1' }, skipHealthCheck: true }),
    (e) => e instanceof SandboxApiException && e.statusCode === 400,
  );
  const ok = await Sandbox.create({ image: 'python:3.11', resource: { cpu: '1', memory: '1Gi' }, resourceRequests: { cpu: '500m' } });
  await ok.kill();
});

test('credential vault: create, read, patch with a revision, delete; 412 without the proxy', { skip }, async () => {
  const s = await Sandbox.create({
    image: 'python:3.11',
    networkPolicy: { defaultAction: 'deny', egress: [{ action: 'allow', target: '*.example.com' }] },
    credentialProxy: { enabled: true },
  });
  try {
    const v = await s.credentialVault.create({
      credentials: [{ name: 'gh', source: { type: 'inline', value: 'node-secret' } }],
      bindings: [{ name: 'api', match: { hosts: ['api.example.com'] }, auth: { type: 'apiKey', name: 'X-Api-Key', credential: 'gh' } }],
    });
    assert.equal(v.revision, 1);
    assert.deepEqual(v.credentials, [{ name: 'gh', sourceType: 'inline', revision: 1 }]);
    assert.equal(JSON.stringify(await s.credentialVault.get()).includes('node-secret'), false);
    assert.deepEqual((await s.credentialVault.getBinding('api')).auth, { type: 'apiKey', name: 'X-Api-Key' });
    await assert.rejects(
      s.credentialVault.patch({ expectedRevision: 9, credentials: { delete: ['gh'] } }),
      (e) => e instanceof SandboxApiException && e.statusCode === 409,
    );
    const p = await s.credentialVault.patch({ expectedRevision: 1, credentials: { add: [{ name: 'two', source: { value: 'x' } }] } });
    assert.equal(p.revision, 2);
    assert.deepEqual((await s.credentialVault.listCredentials()).map((c) => c.name).sort(), ['gh', 'two']);
    await s.credentialVault.delete();
  } finally {
    await s.kill();
  }
  await assert.rejects(sbx.credentialVault.get(), (e) => e instanceof SandboxApiException && e.statusCode === 412);
});

test('isolation: capabilities have the official shape', { skip }, async () => {
  const c = await sbx.isolation.capabilities();
  assert.equal(typeof c.available, 'boolean');
  assert.equal(typeof c.setpriv_available, 'boolean');
  assert.equal(typeof c.commit_supported, 'boolean');
});

test('origin: a template-backed sandbox, also to a new handle (OPEN-SANDBOX-ORIGIN)', { skip }, async () => {
  const { SandboxOrigin } = await import('../index.js');
  const manager = SandboxManager.create();
  const tpl = await manager.createTemplate({
    image: 'python:3.11', publish: 's3://node-test/origin', entrypoint: ['sleep', 'infinity'],
  });
  try {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const t = await manager.getTemplate(tpl.templateId);
      if (t.status.phase === 'Succeeded') break;
      assert.ok(t.status.phase !== 'Failed' && Date.now() < deadline, JSON.stringify(t.status));
      await new Promise((r) => setTimeout(r, 200));
    }
    const fromTpl = await Sandbox.createFromTemplate(tpl.templateId, { timeoutSeconds: 300 });
    try {
      assert.equal(fromTpl.origin, SandboxOrigin.TEMPLATE);
      const again = await Sandbox.connect({ sandboxId: fromTpl.id, skipHealthCheck: true });
      assert.equal(again.origin, SandboxOrigin.TEMPLATE);
      await again.getEgressPolicy();
      await assert.rejects(again.credentialVault.get(), InvalidArgumentException);
    } finally {
      await fromTpl.kill();
    }
    assert.equal(sbx.origin, SandboxOrigin.UNKNOWN);
  } finally {
    await manager.deleteTemplate(tpl.templateId);
  }
});

test('endpoint cache: a cached endpoint still works after pause and resume', { skip }, async () => {
  const connectionConfig = new ConnectionConfig({ endpointCacheTtlMs: 600_000, endpointCacheSize: 16 });
  const sb = await Sandbox.create({ connectionConfig, image: 'python:3.11', metadata: { suite: 'node' } });
  try {
    const before = await sb.getEndpoint(44772);
    assert.ok(before.endpoint);
    assert.equal((await sb.commands.run('echo before')).exitCode, 0);
    await sb.pause();
    const resumed = await sb.resume();
    const ex = await resumed.commands.run('echo after');
    assert.deepEqual(ex.logs.stdout.map((m) => m.text), ['after']);
    assert.ok((await resumed.getEndpoint(44772)).endpoint);
  } finally {
    await sb.kill();
  }
});
