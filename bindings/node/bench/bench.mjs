// make bench-node: the same operations through this package and through the official
// @alibaba-group/opensandbox from npm, against the same (release) server, one run each.
// Prints a table of figures and ratios (official time / ours: > 1 means ours is faster).
// Env: OPEN_SANDBOX_DOMAIN / OPEN_SANDBOX_API_KEY (scripts/with-server.sh),
// BENCH_DIR (where the official package is installed), OPENSANDBOX_NODE_ADDON.
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
const oursPath = path.join(here, '..', 'lib', 'index.js');
const benchDir = path.resolve(process.env.BENCH_DIR ?? path.join(here, '..', '..', '..', '.work', 'node', 'bench'));
const officialPath = createRequire(path.join(benchDir, 'package.json')).resolve('@alibaba-group/opensandbox');
const req = createRequire(import.meta.url);

const MB = 1024 * 1024;
const STDOUT_MB = Number(process.env.BENCH_STDOUT_MB ?? 100);
const TRANSFER_MB = Number(process.env.BENCH_TRANSFER_MB ?? 256);

const now = () => Number(process.hrtime.bigint()) / 1e6;
const p50 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function importMs(modPath) {
  const runs = [];
  for (let i = 0; i < 5; i++) {
    const out = execFileSync(process.execPath, ['-e', `const t=process.hrtime.bigint();require(${JSON.stringify(modPath)});console.log(Number(process.hrtime.bigint()-t)/1e6)`], { env: process.env });
    runs.push(Number(String(out).trim()));
  }
  return p50(runs);
}

async function measure(name, sdk) {
  const r = {};
  const sbx = await sdk.Sandbox.create({ image: 'python:3.11', resource: { cpu: '2', memory: '4Gi' } });
  try {
    await sbx.files.writeFiles([{ path: '/tmp/info.txt', data: 'x' }]);
    const info = [];
    for (let i = 0; i < 200; i++) {
      const t = now();
      await sbx.files.getFileInfo(['/tmp/info.txt']);
      info.push(now() - t);
    }
    r.info = p50(info);
    const runs = [];
    for (let i = 0; i < 100; i++) {
      const t = now();
      await sbx.commands.run('true');
      runs.push(now() - t);
    }
    r.run = p50(runs);

    // 100 MB of stdout (lines of 1000 bytes) into a handler, not accumulated.
    const lines = Math.floor((STDOUT_MB * MB) / 1001);
    let bytes = 0;
    let t = now();
    const ex = await sbx.commands.run(
      `python3 -c "import sys; l='a'*1000+'\\n'; w=sys.stdout.write
for _ in range(${lines}): w(l)"`,
      undefined,
      { skipAccumulation: true, onStdout: (m) => { bytes += m.text.length + 1; } },
    );
    r.stdout = now() - t;
    if (ex.exitCode !== 0 || bytes !== lines * 1001) throw new Error(`${name}: stdout run got ${bytes} bytes, exit ${ex.exitCode}`);
    r.stdoutMBs = bytes / MB / (r.stdout / 1000);

    const buf = Buffer.alloc(TRANSFER_MB * MB, 0x61);
    t = now();
    await sbx.files.writeFiles([{ path: '/tmp/big.bin', data: buf }]);
    r.upload = now() - t;
    t = now();
    let got = 0;
    for await (const c of sbx.files.readBytesStream('/tmp/big.bin')) got += c.length;
    r.download = now() - t;
    if (got !== buf.length) throw new Error(`${name}: downloaded ${got} of ${buf.length} bytes`);
  } finally {
    await sbx.kill();
  }
  return r;
}

const official = req(officialPath);
const ours = req(oursPath);
const results = {
  ours: { importMs: importMs(oursPath), ...(await measure('ours', ours)) },
  official: { importMs: importMs(officialPath), ...(await measure('official', official)) },
};

const rows = [
  ['import (p50 of 5 cold processes)', 'importMs', 'ms'],
  ['files.getFileInfo p50 (200 calls)', 'info', 'ms'],
  ['commands.run("true") p50 (100 runs)', 'run', 'ms'],
  [`${STDOUT_MB} MB stdout into onStdout`, 'stdout', 'ms'],
  [`${TRANSFER_MB} MB upload (writeFiles, Buffer)`, 'upload', 'ms'],
  [`${TRANSFER_MB} MB download (readBytesStream)`, 'download', 'ms'],
];
const fmt = (v) => v.toFixed(v < 10 ? 2 : 0).padStart(9);
console.log(`\nopensandbox-node vs @alibaba-group/opensandbox (official), same release server, one run`);
console.log(`${'operation'.padEnd(42)} ${'ours'.padStart(9)} ${'official'.padStart(9)}  official/ours`);
for (const [label, k, unit] of rows) {
  const o = results.ours[k];
  const f = results.official[k];
  console.log(`${label.padEnd(42)} ${fmt(o)} ${fmt(f)}  ${(f / o).toFixed(2)}x  (${unit})`);
}
console.log(
  `stdout throughput: ours ${results.ours.stdoutMBs.toFixed(0)} MB/s, official ${results.official.stdoutMBs.toFixed(0)} MB/s; ` +
    `upload ${(TRANSFER_MB / (results.ours.upload / 1000)).toFixed(0)} vs ${(TRANSFER_MB / (results.official.upload / 1000)).toFixed(0)} MB/s; ` +
    `download ${(TRANSFER_MB / (results.ours.download / 1000)).toFixed(0)} vs ${(TRANSFER_MB / (results.official.download / 1000)).toFixed(0)} MB/s`,
);
