// One column of `make bench` (scripts/bench/run.py): the shared workloads through this
// package or the official @alibaba-group/opensandbox from npm (argv[2]: "ours" or
// "official"), against the server of OPEN_SANDBOX_DOMAIN; prints one JSON line.
// Env: the BENCH_* workload, BENCH_DIR (where the official package is installed),
// OPENSANDBOX_NODE_ADDON (the release addon for ours).
import { createRequire } from 'node:module';
import { readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
const impl = process.argv[2] ?? 'ours';
const req = createRequire(import.meta.url);
let modPath = path.join(here, '..', 'lib', 'index.cjs');
if (impl === 'official') {
  const benchDir = path.resolve(process.env.BENCH_DIR ?? path.join(here, '..', '..', '..', '.work', 'node', 'bench'));
  modPath = createRequire(path.join(benchDir, 'package.json')).resolve('@alibaba-group/opensandbox');
}
const sdk = req(modPath);

const env = (k, d) => process.env[k] ?? d;
const infoCalls = Number(env('BENCH_INFO_CALLS', 200));
const runCalls = Number(env('BENCH_RUN_CALLS', 50));
const stdoutCmd = env('BENCH_STDOUT_CMD');
const stdoutBytes = Number(env('BENCH_STDOUT_BYTES'));
const uploadFile = env('BENCH_UPLOAD_FILE');

const now = () => Number(process.hrtime.bigint()) / 1e6;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function p50(fn, n, warm) {
  for (let i = 0; i < warm; i++) await fn();
  const xs = [];
  for (let i = 0; i < n; i++) {
    const t = now();
    await fn();
    xs.push(now() - t);
  }
  return median(xs);
}

const res = { lang: 'node', impl };
const sbx = await sdk.Sandbox.create({ image: 'python:3.11' });
try {
  await sbx.files.writeFiles([{ path: '/tmp/bench/small.txt', data: 'x' }]);
  res.file_info_p50_ms = await p50(() => sbx.files.getFileInfo(['/tmp/bench/small.txt']), infoCalls, 20);
  res.run_true_p50_ms = await p50(() => sbx.commands.run('true'), runCalls, 5);

  let bytes = 0;
  let t = now();
  await sbx.commands.run(stdoutCmd, undefined, {
    skipAccumulation: true,
    onStdout: (m) => {
      bytes += m.text.length + 1;
    },
  });
  const dt = (now() - t) / 1000;
  if (bytes !== stdoutBytes) throw new Error(`${impl}: stdout run got ${bytes} of ${stdoutBytes} bytes`);
  res.stdout_mb_s = stdoutBytes / 1e6 / dt;

  const size = statSync(uploadFile).size;
  const buf = readFileSync(uploadFile);
  t = now();
  await sbx.files.writeFiles([{ path: '/tmp/bench/big.bin', data: buf }]);
  res.upload_mb_s = size / 1e6 / ((now() - t) / 1000);

  t = now();
  let got = 0;
  for await (const c of sbx.files.readBytesStream('/tmp/bench/big.bin')) got += c.length;
  res.download_mb_s = size / 1e6 / ((now() - t) / 1000);
  if (got !== size) throw new Error(`${impl}: downloaded ${got} of ${size} bytes`);
} finally {
  await sbx.kill();
}
console.log(JSON.stringify(res));
