'use strict';
// Runs (commands, code, isolated sessions): native event batches → the official
// ServerStreamEvents, handlers and the folded Execution.

const errors = require('./errors.cjs');
const { abortError, clean, ms } = require('./util.cjs');

const { call, fromNative } = errors;


/** Native (core) event → the official ServerStreamEvent (wire shape). */
function wireEvent(ev) {
  switch (ev.type) {
    case 'init':
      return { type: 'init', text: ev.id, timestamp: ev.timestamp };
    case 'stdout':
    case 'stderr':
      return { type: ev.type, text: ev.text, timestamp: ev.timestamp };
    case 'result':
      return { type: 'result', results: ev.raw, timestamp: ev.timestamp };
    case 'execution_count':
      return { type: 'execution_count', execution_count: ev.count, timestamp: ev.timestamp };
    case 'status':
      return { type: 'status', text: ev.text, timestamp: ev.timestamp };
    case 'error':
      return {
        type: 'error',
        error: { ename: ev.name, evalue: ev.value, traceback: ev.traceback },
        timestamp: ev.timestamp,
      };
    case 'execution_complete':
      return { type: 'execution_complete', execution_time: ev.execution_time_ms, timestamp: ev.timestamp };
    default:
      return ev;
  }
}

/** Mirrors the official ExecutionEventDispatcher: mutates `execution`, calls handlers. */
class ExecutionEventDispatcher {
  constructor(execution, handlers) {
    this.execution = execution;
    this.handlers = handlers;
  }

  async dispatch(ev) {
    const h = this.handlers;
    if (h && h.onEvent) await h.onEvent(ev);
    const ts = ev.timestamp ?? Date.now();
    const ex = this.execution;
    switch (ev.type) {
      case 'init': {
        const id = ev.text ?? '';
        if (id) ex.id = id;
        if (h && h.onInit) await h.onInit({ id, timestamp: ts });
        return;
      }
      case 'stdout':
      case 'stderr': {
        const msg = { text: ev.text ?? '', timestamp: ts, isError: ev.type === 'stderr' };
        if (!(h && h.skipAccumulation)) ex.logs[ev.type].push(msg);
        const f = h && (ev.type === 'stdout' ? h.onStdout : h.onStderr);
        if (f) await f(msg);
        return;
      }
      case 'result': {
        const raw = ev.results;
        const t = raw ? raw['text/plain'] ?? raw.text ?? raw.textPlain : undefined;
        const r = { text: t == null ? undefined : String(t), timestamp: ts, raw };
        ex.result.push(r);
        if (h && h.onResult) await h.onResult(r);
        return;
      }
      case 'execution_count':
        if (typeof ev.execution_count === 'number') ex.executionCount = ev.execution_count;
        return;
      case 'execution_complete': {
        const ms = ev.execution_time;
        const c = { timestamp: ts, executionTimeMs: typeof ms === 'number' ? ms : 0 };
        ex.complete = c;
        if (h && h.onExecutionComplete) await h.onExecutionComplete(c);
        return;
      }
      case 'error': {
        const e = ev.error;
        if (e) {
          const err = {
            name: String(e.ename ?? e.name ?? ''),
            value: String(e.evalue ?? e.value ?? ''),
            timestamp: ts,
            traceback: Array.isArray(e.traceback) ? e.traceback.map(String) : [],
          };
          ex.error = err;
          if (h && h.onError) await h.onError(err);
        }
        return;
      }
      default:
    }
  }
}

/** Bytes of one `meta` record of a batch. */
const META = 13;

/**
 * Pulls batches of a started run; closes (releases) it on abort and at the end. A
 * batch is `{meta, text, other, last}` (src/streams.rs `EventBatch`): `meta` a Buffer of
 * 13-byte records, one per item in order (`u8 kind` 1 stdout / 2 stderr / 0 other,
 * `f64 timestamp`, `u32 length` of the line in `text`, little-endian); output lines'
 * texts are concatenated in `text`; every other item is the next element of `other`
 * (a JSON array of the op layer's event objects), the last one the run's `end` item.
 */
async function* nativeBatches(open, signal) {
  if (signal && signal.aborted) throw abortError(signal);
  const stream = await call(open());
  const onAbort = () => stream.close();
  if (signal) signal.addEventListener('abort', onAbort, { once: true });
  try {
    if (signal && signal.aborted) throw abortError(signal);
    for (;;) {
      const batch = await call(stream.next());
      if (signal && signal.aborted) throw abortError(signal);
      if (batch == null) return;
      yield batch;
      if (batch.last) return;
    }
  } finally {
    if (signal) signal.removeEventListener('abort', onAbort);
    stream.close();
  }
}

/** A run's `end` item that failed, as the exception of its error payload. */
function endError(end) {
  const p = end.error || {};
  const e = new Error(`\u0001OSB${JSON.stringify({
    kind: p.kind, status: p.status, code: p.code, requestId: p.request_id, message: p.message, operation: p.operation,
  })}`);
  return fromNative(e);
}

/** The wire events of a run (the official ServerStreamEvent shapes), without its end. */
async function* wireEvents(open, signal) {
  for await (const batch of nativeBatches(open, signal)) {
    const { meta, text } = batch;
    let other = null;
    let oi = 0;
    let off = 0;
    for (let p = 0; p < meta.length; p += META) {
      const kind = meta[p];
      if (kind !== 0) {
        const end = off + meta.readUInt32LE(p + 9);
        yield { type: kind === 1 ? 'stdout' : 'stderr', text: text.slice(off, end), timestamp: meta.readDoubleLE(p + 1) };
        off = end;
        continue;
      }
      if (other === null) other = JSON.parse(batch.other);
      const item = other[oi++];
      if (item.type === 'end') {
        if (!item.ok) throw endError(item);
        return;
      }
      yield wireEvent(item);
    }
  }
}

/**
 * The official Execution of a run's `end` item: the outcome the core folded (exit
 * code, execution count, error, completion, kept output). `exitCode` is left out
 * when the core has none for this kind of run (background commands, code), as the
 * official SDK does; a foreground command without one gets null.
 */
function executionOf(end, foreground) {
  if (!end) throw new errors.SandboxInternalException({ message: 'the run ended without its outcome' });
  if (!end.ok) throw endError(end);
  const x = end.execution;
  const msgs = (texts, stamps, isError) => (texts || []).map((t, i) => ({ text: t, timestamp: stamps[i], isError }));
  const ex = {
    logs: {
      stdout: msgs(x.stdout, x.stdout_timestamps, false),
      stderr: msgs(x.stderr, x.stderr_timestamps, true),
    },
    result: (x.results || []).map((r) => ({ text: r.text ?? undefined, timestamp: r.timestamp, raw: r.raw })),
  };
  if (x.id) ex.id = x.id;
  if (typeof x.execution_count === 'number') ex.executionCount = x.execution_count;
  if (x.error) {
    ex.error = { name: x.error.name, value: x.error.value, timestamp: x.error.timestamp, traceback: x.error.traceback ?? [] };
  }
  if (x.complete) ex.complete = { timestamp: x.complete.timestamp, executionTimeMs: x.complete.execution_time_ms ?? 0 };
  if (x.exit_code != null) ex.exitCode = x.exit_code;
  else if (foreground) ex.exitCode = null;
  return ex;
}

function wantsEvents(h) {
  return !!(h && (h.onEvent || h.onInit || h.onStdout || h.onStderr || h.onResult || h.onError || h.onExecutionComplete));
}

/**
 * Runs a run to completion: handlers get the events as they arrive (the official
 * dispatcher's rules, with an `onEvent` hook through the wire shapes), and the
 * Execution is the run's folded outcome. `open(events, skip)` starts the run.
 */
async function consume(open, handlers, signal, foreground) {
  const h = handlers || {};
  const events = wantsEvents(h);
  // Handlers only: the dispatcher's execution is scratch, the outcome comes from `end`.
  const d = new ExecutionEventDispatcher({ logs: { stdout: [], stderr: [] }, result: [] }, { ...h, skipAccumulation: true });
  const { onStdout, onStderr } = h;
  let end;
  for await (const batch of nativeBatches(() => open(events, !!h.skipAccumulation), signal)) {
    const { meta, text } = batch;
    let other = null;
    let oi = 0;
    let off = 0;
    for (let p = 0; p < meta.length; p += META) {
      const kind = meta[p];
      if (kind !== 0) {
        const stop = off + meta.readUInt32LE(p + 9);
        const isErr = kind === 2;
        const t = text.slice(off, stop);
        const ts = meta.readDoubleLE(p + 1);
        off = stop;
        if (h.onEvent) {
          await d.dispatch({ type: isErr ? 'stderr' : 'stdout', text: t, timestamp: ts });
          continue;
        }
        const f = isErr ? onStderr : onStdout;
        if (f) {
          const r = f({ text: t, timestamp: ts, isError: isErr });
          if (r && typeof r.then === 'function') await r;
        }
        continue;
      }
      if (other === null) other = JSON.parse(batch.other);
      const item = other[oi++];
      if (item.type === 'end') end = item;
      else await d.dispatch(wireEvent(item));
    }
  }
  return executionOf(end, foreground);
}

/**
 * A run with no handler that wants events and no abort signal, made in one native call
 * (the op layer's `op`, e.g. `commands.run`, which runs it to its end) instead of a
 * start and a pull per batch: each native call is a hop to the runtime and back to the
 * JS thread, ~0.1 ms, and `run("true")` took three (docs/architecture.md "Per-call
 * cost"). A signal needs the started run's handle to cancel it, events need the
 * batches: those go through `consume`.
 */
async function runOnce(sbx, op, args, handlers, foreground) {
  const h = handlers || {};
  const x = await sbx._call(op, { ...args, skip_accumulation: !!h.skipAccumulation });
  return executionOf({ ok: true, execution: x }, foreground);
}

function runArgs(command, opts = {}) {
  return {
    command,
    background: !!opts.background,
    working_directory: opts.workingDirectory,
    timeout_ms: ms(opts.timeoutSeconds),
    uid: opts.uid,
    gid: opts.gid,
    envs: opts.envs ?? undefined,
  };
}

/** The start arguments of a run: `handlers` = report events, `skip` = keep no output. */
const startArgs = (sbx, args, events, skip) => clean({ ...args, sandbox: sbx._h, handlers: events, skip_accumulation: skip });

module.exports = { wireEvent, ExecutionEventDispatcher, wireEvents, consume, runOnce, wantsEvents, runArgs, startArgs };
