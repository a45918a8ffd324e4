// Must exit by itself: after real work (create, run, stream, download, watch) nothing
// of the client may keep the event loop alive. tests/sandbox.test.mjs runs it with a
// deadline.
import { Sandbox } from '../index.js';

const sbx = await Sandbox.create({ image: 'python:3.11' });
await sbx.commands.run('echo idle');
for await (const ev of sbx.commands.runStream('echo a; sleep 0.1; echo b')) if (ev.type === 'stdout') break;
await sbx.files.writeFiles([{ path: '/tmp/idle.txt', data: 'x' }]);
for await (const c of sbx.files.readBytesStream('/tmp/idle.txt')) void c;
for await (const m of sbx.metrics.watchMetrics()) { void m; break; }
await sbx.kill();
console.log('idle-exit: done');
