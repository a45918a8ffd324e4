// Driver of a javascript code context of the OpenSandbox execd agent.
//
// Reads one JSON request per line on stdin ({"code": "..."}), evaluates it in one
// persistent `vm` context, and writes JSON event lines on fd 3 (same events as the
// python driver): stdout/stderr text, `result` with the completion value of the
// script (awaited if it is a promise), `error`, and `done` last for each request.
'use strict';
const fs = require('fs');
const readline = require('readline');
const util = require('util');
const vm = require('vm');
const { Writable } = require('stream');

const EVENTS_FD = 3;

function emit(obj) {
  const line = Buffer.from(JSON.stringify(obj) + '\n', 'utf8');
  let off = 0;
  while (off < line.length) {
    try {
      off += fs.writeSync(EVENTS_FD, line, off);
    } catch (e) {
      if (e.code !== 'EAGAIN') throw e;
    }
  }
}

function eventStream(kind) {
  return new Writable({
    decodeStrings: false,
    write(chunk, encoding, callback) {
      const text = typeof chunk === 'string' ? chunk : chunk.toString('utf8');
      if (text.length > 0) emit({ type: kind, text });
      callback();
    },
  });
}

const out = eventStream('stdout');
const err = eventStream('stderr');
const userConsole = new console.Console({ stdout: out, stderr: err });

// process.stdout/stderr writes from user code become events too; only output of
// subprocesses still reaches the real fds (the agent forwards those separately).
for (const [stream, kind] of [[process.stdout, 'stdout'], [process.stderr, 'stderr']]) {
  stream.write = (chunk, encoding, callback) => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    if (text.length > 0) emit({ type: kind, text });
    const cb = typeof encoding === 'function' ? encoding : callback;
    if (typeof cb === 'function') process.nextTick(cb);
    return true;
  };
}

const sandbox = {
  console: userConsole,
  require,
  process,
  Buffer,
  URL,
  URLSearchParams,
  TextEncoder,
  TextDecoder,
  setTimeout,
  setInterval,
  setImmediate,
  clearTimeout,
  clearInterval,
  clearImmediate,
  queueMicrotask,
  structuredClone,
  module: { exports: {} },
  __dirname: process.cwd(),
  __filename: 'cell',
};
sandbox.global = sandbox;
const context = vm.createContext(sandbox);

let count = 0;
let interruptCurrent = null;

process.on('SIGINT', () => {
  // Synchronous code is stopped by breakOnSigint; this ends an awaited promise.
  if (interruptCurrent) interruptCurrent(new Error('Script execution interrupted.'));
});
process.on('uncaughtException', (e) => {
  emit({ type: 'stderr', text: 'Uncaught ' + ((e && e.stack) || String(e)) + '\n' });
});
process.on('unhandledRejection', (e) => {
  emit({ type: 'stderr', text: 'Unhandled rejection: ' + ((e && e.stack) || String(e)) + '\n' });
});

function errorEvent(e) {
  const isObj = e !== null && typeof e === 'object';
  const ename = (isObj && e.name) || (isObj && e.constructor && e.constructor.name) || 'Error';
  const evalue = isObj && e.message !== undefined ? String(e.message) : String(e);
  const stack = isObj && e.stack ? String(e.stack) : ename + ': ' + evalue;
  return { type: 'error', ename: String(ename), evalue, traceback: stack.split('\n') };
}

async function execute(code) {
  count += 1;
  try {
    const script = new vm.Script(code, { filename: `<cell ${count}>` });
    // From here a SIGINT stops the cell: the agent interrupts only after this (before
    // it, node may not have its SIGINT listener yet and would die of the signal).
    emit({ type: 'started' });
    let value = script.runInContext(context, { breakOnSigint: true, displayErrors: false });
    if (value !== null && typeof value === 'object' && typeof value.then === 'function') {
      value = await Promise.race([
        value,
        new Promise((_, reject) => {
          interruptCurrent = reject;
        }),
      ]);
    }
    if (value !== undefined) {
      emit({ type: 'result', count, text: util.inspect(value) });
    }
  } catch (e) {
    emit(errorEvent(e));
  } finally {
    interruptCurrent = null;
    emit({ type: 'done' });
  }
}

const rl = readline.createInterface({ input: process.stdin, terminal: false });
let chain = Promise.resolve();
rl.on('line', (line) => {
  chain = chain.then(() => {
    let request;
    try {
      request = JSON.parse(line);
    } catch (e) {
      emit(errorEvent(e));
      emit({ type: 'done' });
      return undefined;
    }
    return execute(String(request.code === undefined ? '' : request.code));
  });
});
rl.on('close', () => {
  chain.then(() => process.exit(0));
});
