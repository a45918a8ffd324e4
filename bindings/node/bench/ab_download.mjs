// A/B of downloads: two builds of the addon and curl, interleaved on one sandbox and
// one file, each run in its own process (no warm state shared between the builds).
//   scripts/with-server.sh target/release/opensandbox-server \
//     node bindings/node/bench/ab_download.mjs OLD.node NEW.node [MiB] [rounds]
// Prints one line per run, then per column the median MB/s (MB = 10^6 bytes), the
// spread (min-max), the % of curl's median and the client's CPU ms per download
// (process.cpuUsage over the download; curl: /usr/bin/time's user + sys). A Node
// process downloads the file twice and reports the second (warm) download; with
// AB_FIRST=1 it downloads once and reports that first (cold) download, as `make bench`
// measures it.
// A benchmark, not a test: the figures depend on the machine's load.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
const [oldAddon, newAddon] = process.argv.slice(2, 4).map((p) => path.resolve(p));
const mib = Number(process.argv[4] ?? 256);
const rounds = Number(process.argv[5] ?? 5);
const size = mib << 20;
const file = '/tmp/bench/ab.bin';

if (process.argv[2] === '--child') {
  // Child: one download through the addon of $OPENSANDBOX_NODE_ADDON.
  const { Sandbox } = await import(path.join(here, '..', 'index.js'));
  const sbx = await Sandbox.connect({ sandboxId: process.argv[3], skipHealthCheck: true });
  // The first download warms the process (connection, the chunk pool, V8's heap
  // limits); the second is the one measured.
  let out;
  const reps = process.env.AB_FIRST === '1' ? 1 : 2;
  for (let rep = 0; rep < reps; rep++) {
    const cpu0 = process.cpuUsage();
    const ru0 = process.resourceUsage();
    const t = process.hrtime.bigint();
    let got = 0;
    for await (const c of sbx.files.readBytesStream(process.argv[4])) got += c.length;
    const s = Number(process.hrtime.bigint() - t) / 1e9;
    const cpu = process.cpuUsage(cpu0);
    const ru = process.resourceUsage();
    out = {
      got, mb_s: got / 1e6 / s, cpu_ms: (cpu.user + cpu.system) / 1000,
      faults: ru.minorPageFault - ru0.minorPageFault,
      csw: ru.voluntaryContextSwitches + ru.involuntaryContextSwitches
        - ru0.voluntaryContextSwitches - ru0.involuntaryContextSwitches,
    };
  }
  console.log(JSON.stringify(out));
  process.exit(0);
}

const { Sandbox } = await import(path.join(here, '..', 'index.js'));
const sbx = await Sandbox.create({ image: 'python:3.11' });
try {
  const data = Buffer.alloc(size);
  for (let i = 0; i < size; i++) data[i] = i % 251;
  await sbx.files.writeFiles([{ path: file, data }]);
  const ep = await sbx.getEndpoint(44772);
  const url = `http://${ep.endpoint}/files/download?path=${encodeURIComponent(file)}`;
  const curlArgs = ['-sS', '--fail', '-o', '/dev/null', '-w', '%{size_download} %{time_total}'];
  for (const [k, v] of Object.entries(ep.headers ?? {})) curlArgs.push('-H', `${k}: ${v}`);

  const runs = { curl: [], old: [], new: [] };
  const node = (addon) => {
    const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child', sbx.id, file], {
      env: { ...process.env, OPENSANDBOX_NODE_ADDON: addon },
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`child failed: ${r.stderr}`);
    const o = JSON.parse(r.stdout.trim().split('\n').pop());
    if (o.got !== size) throw new Error(`downloaded ${o.got} of ${size}`);
    return o;
  };
  const curl = () => {
    const r = spawnSync('/usr/bin/time', ['-f', '%U %S', 'curl', ...curlArgs, url], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`curl failed: ${r.stderr}`);
    const [n, secs] = r.stdout.trim().split(' ').map(Number);
    const [u, sy] = r.stderr.trim().split('\n').pop().split(' ').map(Number);
    if (n !== size) throw new Error(`curl downloaded ${n} of ${size}`);
    return { mb_s: n / 1e6 / secs, cpu_ms: (u + sy) * 1000 };
  };
  for (let i = 0; i < rounds; i++) {
    // The order rotates, so no column always follows the same one.
    const order = [['curl', curl], ['old', () => node(oldAddon)], ['new', () => node(newAddon)]];
    for (let k = 0; k < i % 3; k++) order.push(order.shift());
    for (const [name, f] of order) {
      const o = f();
      runs[name].push(o);
      console.log(`round ${i} ${name}: ${o.mb_s.toFixed(0)} MB/s, ${o.cpu_ms.toFixed(0)} ms CPU` +
        (o.faults === undefined ? '' : `, ${o.faults} faults, ${o.csw} context switches`));
    }
  }
  const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const curlMed = med(runs.curl.map((o) => o.mb_s));
  for (const [name, os] of Object.entries(runs)) {
    const xs = os.map((o) => o.mb_s);
    console.log(`${name}: median ${med(xs).toFixed(0)} MB/s (${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)}),` +
      ` ${((100 * med(xs)) / curlMed).toFixed(0)} % of curl, CPU ${med(os.map((o) => o.cpu_ms)).toFixed(0)} ms` +
      (name === 'curl' ? '' : `, ${med(os.map((o) => o.faults))} faults, ${med(os.map((o) => o.csw))} cs`) + `, n=${xs.length}`);
  }
  // Paired within a round: the machine moves less between neighbouring runs.
  const ratio = runs.new.map((o, i) => o.mb_s / runs.old[i].mb_s);
  console.log(`new/old within a round: median ${med(ratio).toFixed(2)} (${Math.min(...ratio).toFixed(2)}-${Math.max(...ratio).toFixed(2)})`);
} finally {
  await sbx.kill();
}
