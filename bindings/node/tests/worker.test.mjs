// The addon under worker_threads: loaded in the main thread and in workers at once,
// each env with its own instances; a worker that exits must not break the others.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import { SandboxManager } from '../index.js';

const skip = process.env.OPEN_SANDBOX_DOMAIN ? false : 'needs a server (OPEN_SANDBOX_DOMAIN)';

const workerSrc = `
const { parentPort } = require('node:worker_threads');
const { SandboxManager } = require(${JSON.stringify(new URL('../lib/index.cjs', import.meta.url).pathname)});
SandboxManager.create().listSandboxInfos({ pageSize: 5 })
  .then((r) => parentPort.postMessage({ ok: true, n: r.items.length }))
  .catch((e) => parentPort.postMessage({ ok: false, e: String(e) }));
`;

function runWorker() {
  return new Promise((resolve, reject) => {
    const w = new Worker(workerSrc, { eval: true });
    let msg;
    w.on('message', (m) => (msg = m));
    w.on('error', reject);
    w.on('exit', (code) => (code === 0 ? resolve(msg) : reject(new Error(`worker exit ${code}`))));
  });
}

test('works in worker threads and after workers exit', { skip }, async () => {
  const results = await Promise.all([runWorker(), runWorker()]);
  for (const r of results) assert.equal(r.ok, true, r.e);
  const again = await runWorker();
  assert.equal(again.ok, true, again.e);
  const r = await SandboxManager.create().listSandboxInfos({ pageSize: 5 });
  assert.ok(Array.isArray(r.items));
});
