'use strict';
// opensandbox for Node: a drop-in for @alibaba-group/opensandbox over the Rust core.
// Every network call goes through the native addon (lib/native.js); this file builds
// the official classes, option bags, shapes and exceptions on top of it.

const native = require('./native.js');
const errors = require('./errors.js');
const { call, fromNative, InvalidArgumentException, SandboxReadyTimeoutException } = errors;

const VERSION = require('../package.json').version;

const DEFAULT_EXECD_PORT = 44772;
const DEFAULT_EGRESS_PORT = 18080;
const DEFAULT_ENTRYPOINT = ['tail', '-f', '/dev/null'];
const DEFAULT_RESOURCE_LIMITS = { cpu: '1', memory: '2Gi' };
const DEFAULT_TIMEOUT_SECONDS = 600;
const DEFAULT_READY_TIMEOUT_SECONDS = 30;
const DEFAULT_HEALTH_CHECK_POLLING_INTERVAL_MILLIS = 200;
const DEFAULT_REQUEST_TIMEOUT_SECONDS = 30;

// ---------------------------------------------------------------------------------
// helpers

const J = JSON.stringify;
const parse = (s) => (s == null ? s : JSON.parse(s));
const date = (s) => (s == null ? undefined : new Date(s));
const dateOrNull = (s) => (s == null ? null : new Date(s));

function abortError(signal) {
  const r = signal && signal.reason;
  if (r instanceof Error) return r;
  const e = new Error('This operation was aborted');
  e.name = 'AbortError';
  e.code = 'ABORT_ERR';
  return e;
}

function readEnv(name) {
  const v = process.env[name];
  return v == null || v === '' ? undefined : v;
}

function stripV1(s) {
  let t = s.replace(/\/+$/, '');
  if (t.endsWith('/v1')) t = t.slice(0, -3);
  return t;
}

// ---------------------------------------------------------------------------------
// ConnectionConfig

class ConnectionConfig {
  constructor(opts = {}) {
    const rawDomain = opts.domain ?? readEnv('OPEN_SANDBOX_DOMAIN') ?? 'localhost:8080';
    let protocol;
    let domain = rawDomain;
    const m = /^(https?):\/\/(.*)$/i.exec(rawDomain);
    if (m) {
      protocol = m[1].toLowerCase();
      domain = m[2];
    }
    this.protocol = protocol ?? opts.protocol ?? 'http';
    this.domain = stripV1(domain);
    this.apiKey = opts.apiKey ?? readEnv('OPEN_SANDBOX_API_KEY');
    this.requestTimeoutSeconds =
      typeof opts.requestTimeoutSeconds === 'number' ? opts.requestTimeoutSeconds : DEFAULT_REQUEST_TIMEOUT_SECONDS;
    this.debug = !!opts.debug;
    this.userAgent = `OpenSandbox-JS-SDK/${VERSION} (opensandbox-node)`;
    this.useServerProxy = !!opts.useServerProxy;
    this.endpointCacheTtlMs = opts.endpointCacheTtlMs ?? 600_000;
    this.endpointCacheSize = opts.endpointCacheSize ?? 1024;
    this.endpointCacheDisabled = !!opts.endpointCacheDisabled;
    this.disableMetrics = !!opts.disableMetrics;
    const userHeaders = { ...(opts.headers ?? {}) };
    const headers = { ...userHeaders };
    if (this.apiKey && !headers['OPEN-SANDBOX-API-KEY']) headers['OPEN-SANDBOX-API-KEY'] = this.apiKey;
    if (!headers['user-agent'] && !headers['User-Agent']) headers['user-agent'] = this.userAgent;
    this.headers = headers;
    Object.defineProperty(this, '_userHeaders', { value: userHeaders, enumerable: false });
    Object.defineProperty(this, '_nativeConfig', { value: null, enumerable: false, writable: true });
  }

  /** `protocol://domain/v1`. */
  getBaseUrl() {
    return `${this.protocol}://${this.domain}/v1`;
  }

  /** The official SDK installs its HTTP transport here; ours lives in the native core. */
  withTransportIfMissing() {
    return this;
  }

  /** Releases the connection pool (the next call opens a new one). */
  async closeTransport() {
    this._nativeConfig = null;
  }

  /** @internal the native configuration (one connection pool per ConnectionConfig). */
  _native() {
    if (!this._nativeConfig) {
      try {
        this._nativeConfig = new native.NativeConfig({
          domain: `${this.protocol}://${this.domain}`,
          protocol: this.protocol,
          apiKey: this.apiKey ?? '',
          headers: this._userHeaders,
          requestTimeoutSeconds: this.requestTimeoutSeconds,
          useServerProxy: this.useServerProxy,
          userAgent: this.userAgent,
        });
      } catch (e) {
        throw fromNative(e);
      }
    }
    return this._nativeConfig;
  }
}

function toConfig(c) {
  if (c instanceof ConnectionConfig) return c;
  return new ConnectionConfig(c ?? {});
}

// ---------------------------------------------------------------------------------
// models

function sandboxInfo(i) {
  if (!i) return i;
  const out = {
    id: i.id,
    status: {
      state: i.status.state,
      reason: i.status.reason ?? undefined,
      message: i.status.message ?? undefined,
      lastTransitionAt: date(i.status.lastTransitionAt),
    },
    entrypoint: i.entrypoint ?? [],
    metadata: i.metadata ?? {},
    createdAt: date(i.createdAt),
    expiresAt: dateOrNull(i.expiresAt),
  };
  if (i.image) out.image = i.image;
  if (i.snapshotId != null) out.snapshotId = i.snapshotId;
  if (i.platform) out.platform = i.platform;
  if (i.extensions && Object.keys(i.extensions).length) out.extensions = i.extensions;
  return out;
}

function snapshotInfo(s) {
  return {
    id: s.id,
    sandboxId: s.sandboxId,
    name: s.name ?? undefined,
    status: {
      state: s.status.state,
      reason: s.status.reason ?? undefined,
      message: s.status.message ?? undefined,
      lastTransitionAt: date(s.status.lastTransitionAt),
    },
    createdAt: date(s.createdAt),
  };
}

function fileInfo(e) {
  return {
    path: e.path,
    type: e.type,
    size: e.size,
    modifiedAt: date(e.modifiedAt),
    createdAt: date(e.createdAt),
    mode: e.mode,
    owner: e.owner,
    group: e.group,
  };
}

function policy(p) {
  const out = {};
  if (p.defaultAction != null) out.defaultAction = p.defaultAction;
  out.egress = p.egress ?? [];
  return out;
}

// ---------------------------------------------------------------------------------
// SandboxManager

class SandboxManager {
  constructor(config, nat) {
    this.connectionConfig = config;
    Object.defineProperty(this, '_n', { value: nat, enumerable: false });
  }

  static create(opts = {}) {
    const config = toConfig(opts.connectionConfig);
    let nat;
    try {
      nat = native.NativeManager.create(config._native());
    } catch (e) {
      throw fromNative(e);
    }
    return new SandboxManager(config, nat);
  }

  async _call(op, args) {
    return parse(await call(this._n.call(op, J(args ?? {}))));
  }

  async listSandboxInfos(filter = {}) {
    const r = await this._call('listSandboxInfos', filter);
    return { items: r.items.map(sandboxInfo), pagination: r.pagination };
  }
  async getSandboxInfo(sandboxId) {
    return sandboxInfo(await this._call('getSandboxInfo', { sandboxId }));
  }
  async patchSandboxMetadata(sandboxId, patch) {
    return sandboxInfo(await this._call('patchSandboxMetadata', { sandboxId, patch }));
  }
  async killSandbox(sandboxId) {
    await this._call('killSandbox', { sandboxId });
  }
  async pauseSandbox(sandboxId) {
    await this._call('pauseSandbox', { sandboxId });
  }
  async resumeSandbox(sandboxId) {
    await this._call('resumeSandbox', { sandboxId });
  }
  async renewSandbox(sandboxId, timeoutSeconds) {
    await this._call('renewSandbox', { sandboxId, seconds: timeoutSeconds });
  }
  async createSnapshot(sandboxId, req = {}) {
    return snapshotInfo(await this._call('createSnapshot', { sandboxId, name: req.name }));
  }
  async getSnapshot(snapshotId) {
    return snapshotInfo(await this._call('getSnapshot', { snapshotId }));
  }
  async listSnapshots(filter = {}) {
    const r = await this._call('listSnapshots', filter);
    return { items: r.items.map(snapshotInfo), pagination: r.pagination };
  }
  async deleteSnapshot(snapshotId) {
    await this._call('deleteSnapshot', { snapshotId });
  }
  /** Extension: the endpoint of `port` in a sandbox. */
  async getEndpoint(sandboxId, port) {
    return this._call('getEndpoint', { sandboxId, port });
  }
  /** Extension: diagnostic logs of a sandbox (`scope` e.g. "lifecycle"). */
  async getDiagnosticLogs(sandboxId, scope) {
    return this._call('getDiagnosticLogs', { sandboxId, scope });
  }
  /** Extension: diagnostic events of a sandbox. */
  async getDiagnosticEvents(sandboxId, scope) {
    return this._call('getDiagnosticEvents', { sandboxId, scope });
  }
  async close() {}
}

// ---------------------------------------------------------------------------------
// executions

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

/**
 * Pulls batches of native events; closes the stream on abort. A batch is
 * `{meta, text, last}`: `meta` a JSON array where output lines are `[1|2, ts, len]`
 * (stdout|stderr; their texts concatenated in `text`) and other events are objects.
 */
async function* nativeBatches(open, signal) {
  if (signal && signal.aborted) throw abortError(signal);
  let stream;
  try {
    stream = open();
  } catch (e) {
    throw fromNative(e);
  }
  const onAbort = () => stream.close();
  if (signal) signal.addEventListener('abort', onAbort, { once: true });
  try {
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

async function* wireEvents(open, signal) {
  for await (const batch of nativeBatches(open, signal)) {
    const meta = JSON.parse(batch.meta);
    const text = batch.text;
    let off = 0;
    for (const item of meta) {
      if (Array.isArray(item)) {
        const end = off + item[2];
        yield { type: item[0] === 1 ? 'stdout' : 'stderr', text: text.slice(off, end), timestamp: item[1] };
        off = end;
      } else yield wireEvent(item);
    }
  }
}

/**
 * Runs a stream to completion: the fast path folds native events directly (same
 * rules as the dispatcher); with an `onEvent` hook every event goes through the
 * official dispatcher with its wire shape.
 */
async function consume(open, handlers, signal, inferExitCode) {
  const execution = { logs: { stdout: [], stderr: [] }, result: [] };
  const h = handlers || {};
  if (h.onEvent) {
    const d = new ExecutionEventDispatcher(execution, h);
    for await (const ev of wireEvents(open, signal)) await d.dispatch(ev);
  } else {
    const keep = !h.skipAccumulation;
    const { onStdout, onStderr } = h;
    const { stdout, stderr } = execution.logs;
    for await (const batch of nativeBatches(open, signal)) {
      const meta = JSON.parse(batch.meta);
      const text = batch.text;
      let off = 0;
      for (let i = 0; i < meta.length; i++) {
        const item = meta[i];
        if (Array.isArray(item)) {
          const end = off + item[2];
          const isErr = item[0] === 2;
          const msg = { text: text.slice(off, end), timestamp: item[1], isError: isErr };
          off = end;
          if (keep) (isErr ? stderr : stdout).push(msg);
          const f = isErr ? onStderr : onStdout;
          if (f) {
            const r = f(msg);
            if (r && typeof r.then === 'function') await r;
          }
        } else {
          await new ExecutionEventDispatcher(execution, h).dispatch(wireEvent(item));
        }
      }
    }
  }
  if (inferExitCode) {
    if (execution.error) {
      const n = Number.parseInt(execution.error.value, 10);
      execution.exitCode = Number.isNaN(n) ? null : n;
    } else if (execution.complete) execution.exitCode = 0;
    else execution.exitCode = null;
  }
  return execution;
}

function runArgs(command, opts = {}) {
  return {
    command,
    background: !!opts.background,
    workingDirectory: opts.workingDirectory,
    timeoutSeconds: opts.timeoutSeconds,
    uid: opts.uid,
    gid: opts.gid,
    envs: opts.envs,
  };
}

class ExecdCommands {
  constructor(sbx) {
    Object.defineProperty(this, '_s', { value: sbx, enumerable: false });
  }

  runStream(command, opts, signal) {
    return wireEvents(() => this._s._n.runStream('command', J(runArgs(command, opts))), signal);
  }

  async run(command, opts, handlers, signal) {
    const open = () => this._s._n.runStream('command', J(runArgs(command, opts)));
    return consume(open, handlers, signal, !(opts && opts.background));
  }

  async interrupt(sessionId) {
    await this._s._call('interrupt', { id: sessionId });
  }

  async getCommandStatus(commandId) {
    const s = await this._s._call('getCommandStatus', { id: commandId });
    return {
      id: s.id,
      content: s.content ?? undefined,
      running: s.running,
      exitCode: s.exitCode ?? null,
      error: s.error ?? undefined,
      startedAt: date(s.startedAt),
      finishedAt: dateOrNull(s.finishedAt),
    };
  }

  async getBackgroundCommandLogs(commandId, cursor) {
    const l = await this._s._call('getBackgroundCommandLogs', { id: commandId, cursor });
    return { content: l.content, cursor: l.cursor ?? undefined };
  }

  async createSession(options = {}) {
    return this._s._call('createSession', { workingDirectory: options.workingDirectory });
  }

  /** Extension: the raw event stream of a session run. */
  runInSessionStream(sessionId, command, options = {}, signal) {
    const args = { sessionId, command, workingDirectory: options.workingDirectory, timeoutSeconds: options.timeoutSeconds };
    return wireEvents(() => this._s._n.runStream('session', J(args)), signal);
  }

  async runInSession(sessionId, command, options = {}, handlers, signal) {
    const args = { sessionId, command, workingDirectory: options.workingDirectory, timeoutSeconds: options.timeoutSeconds };
    return consume(() => this._s._n.runStream('session', J(args)), handlers, signal, true);
  }

  async deleteSession(sessionId) {
    await this._s._call('deleteSession', { sessionId });
  }
}

// ---------------------------------------------------------------------------------
// files

function isAsyncIterable(x) {
  return x != null && typeof x[Symbol.asyncIterator] === 'function';
}

function toBuffer(d) {
  if (d == null) return Buffer.alloc(0);
  if (typeof d === 'string') return Buffer.from(d, 'utf8');
  if (Buffer.isBuffer(d)) return d;
  if (d instanceof ArrayBuffer) return Buffer.from(d);
  if (ArrayBuffer.isView(d)) return Buffer.from(d.buffer, d.byteOffset, d.byteLength);
  return null;
}

async function* chunksOf(d) {
  if (typeof Blob !== 'undefined' && d instanceof Blob) d = d.stream();
  if (isAsyncIterable(d)) {
    for await (const c of d) yield c;
    return;
  }
  if (d && typeof d.getReader === 'function') {
    const r = d.getReader();
    try {
      for (;;) {
        const { done, value } = await r.read();
        if (done) return;
        yield value;
      }
    } finally {
      r.releaseLock();
    }
  }
  if (d && typeof d[Symbol.iterator] === 'function') {
    for (const c of d) yield c;
    return;
  }
  throw new InvalidArgumentException({ message: 'unsupported data type for writeFiles' });
}

const UPLOAD_CHUNK = 1 << 20;

class SandboxFiles {
  constructor(sbx) {
    Object.defineProperty(this, '_s', { value: sbx, enumerable: false });
  }

  async getFileInfo(paths) {
    const r = await this._s._call('getFileInfo', { paths });
    const out = {};
    for (const [k, v] of Object.entries(r)) out[k] = fileInfo(v);
    return out;
  }
  async search(entry) {
    return (await this._s._call('search', { path: entry.path, pattern: entry.pattern })).map(fileInfo);
  }
  async listDirectory(entry) {
    return (await this._s._call('listDirectory', { path: entry.path, depth: entry.depth })).map(fileInfo);
  }
  async createDirectories(entries) {
    await this._s._call('createDirectories', { entries });
  }
  async deleteDirectories(paths) {
    await this._s._call('deleteDirectories', { paths });
  }
  async deleteFiles(paths) {
    await this._s._call('deleteFiles', { paths });
  }
  async moveFiles(entries) {
    await this._s._call('moveFiles', { entries });
  }
  async replaceContents(entries) {
    await this._s._call('replaceContents', { entries });
  }
  async replaceContentsDetailed(entries) {
    return this._s._call('replaceContentsDetailed', { entries });
  }
  async setPermissions(entries) {
    await this._s._call('setPermissions', { entries });
  }

  /**
   * Writes several files in one multipart request. In-memory data (string, Buffer,
   * Uint8Array, ArrayBuffer) is handed over at once; streams (Readable, async
   * iterables, ReadableStream, Blob) are fed chunk by chunk with backpressure.
   */
  async writeFiles(entries) {
    const meta = [];
    const buffers = [];
    const streamed = [];
    entries.forEach((e, i) => {
      const b = toBuffer(e.data);
      meta.push({ path: e.path, mode: e.mode, owner: e.owner, group: e.group, streamed: b === null });
      buffers.push(b === null ? null : b);
      if (b === null) streamed.push(i);
    });
    let up;
    try {
      up = this._s._n.upload(J(meta), buffers);
    } catch (e) {
      throw fromNative(e);
    }
    try {
      for (const i of streamed) {
        let accepted = true;
        for await (const c of chunksOf(entries[i].data)) {
          let buf = typeof c === 'string' ? Buffer.from(c, 'utf8') : toBuffer(c);
          if (buf === null) throw new InvalidArgumentException({ message: 'stream chunks must be bytes or strings' });
          for (let off = 0; off < buf.length && accepted; off += UPLOAD_CHUNK) {
            accepted = await up.write(i, off === 0 && buf.length <= UPLOAD_CHUNK ? buf : buf.subarray(off, off + UPLOAD_CHUNK));
          }
          if (!accepted) break;
        }
        up.end(i);
        if (!accepted) break;
      }
    } catch (e) {
      up.abort(String(e && e.message ? e.message : e));
      await up.finish().catch(() => {});
      throw fromNative(e);
    }
    await call(up.finish());
  }

  /** Extension: writes one file (text, bytes or a stream). */
  async writeFile(path, data, opts = {}) {
    await this.writeFiles([{ path, data, mode: opts.mode, owner: opts.owner, group: opts.group }]);
  }

  async readFile(path, opts = {}) {
    const enc = opts.encoding;
    if (enc && !/^utf-?8$/i.test(enc)) {
      const b = await this.readBytes(path, opts);
      return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString(enc);
    }
    return this._s._call('readFile', { path, range: opts.range, offset: opts.offset, limit: opts.limit });
  }

  async readBytes(path, opts = {}) {
    const b = await call(this._s._n.readBytes(path, J({ range: opts.range, offset: opts.offset, limit: opts.limit })));
    return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  }

  async *readBytesStream(path, opts = {}) {
    const signal = opts.signal;
    const s = await call(this._s._n.readStream(path, J({ range: opts.range, offset: opts.offset, limit: opts.limit })));
    const onAbort = () => s.close();
    if (signal) signal.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        const c = await call(s.next());
        if (signal && signal.aborted) throw abortError(signal);
        if (c == null) return;
        yield new Uint8Array(c.buffer, c.byteOffset, c.byteLength);
      }
    } finally {
      if (signal) signal.removeEventListener('abort', onAbort);
      s.close();
    }
  }
}

class ExecdHealth {
  constructor(sbx) {
    Object.defineProperty(this, '_s', { value: sbx, enumerable: false });
  }
  async ping() {
    return this._s._call('ping', {});
  }
}

class ExecdMetrics {
  constructor(sbx) {
    Object.defineProperty(this, '_s', { value: sbx, enumerable: false });
  }
  async getMetrics() {
    return this._s._call('getMetrics', {});
  }
  /** Extension: `GET /metrics/watch` as an async iterable of SandboxMetrics. */
  async *watchMetrics(signal) {
    const s = await call(this._s._n.watchMetrics());
    const onAbort = () => s.close();
    if (signal) signal.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        const m = await call(s.next());
        if (signal && signal.aborted) throw abortError(signal);
        if (m == null) return;
        yield JSON.parse(m);
      }
    } finally {
      if (signal) signal.removeEventListener('abort', onAbort);
      s.close();
    }
  }
}

// ---------------------------------------------------------------------------------
// Sandbox

function connectArgs(o = {}) {
  return {
    skipHealthCheck: !!o.skipHealthCheck || typeof o.healthCheck === 'function',
    readyTimeoutSeconds: o.readyTimeoutSeconds,
    healthCheckPollingInterval: o.healthCheckPollingInterval,
  };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

class Sandbox {
  constructor(config, nat) {
    this.id = nat.id;
    this.connectionConfig = config;
    Object.defineProperty(this, '_n', { value: nat, enumerable: false });
    Object.defineProperty(this, '_manager', { value: null, enumerable: false, writable: true });
    this.commands = new ExecdCommands(this);
    this.files = new SandboxFiles(this);
    this.health = new ExecdHealth(this);
    this.metrics = new ExecdMetrics(this);
  }

  /** The lifecycle service (a SandboxManager over the same configuration). */
  get sandboxes() {
    if (!this._manager) this._manager = SandboxManager.create({ connectionConfig: this.connectionConfig });
    return this._manager;
  }

  async _call(op, args) {
    return parse(await call(this._n.call(op, J(args ?? {}))));
  }

  static async create(opts = {}) {
    if (opts.adapterFactory) {
      throw new InvalidArgumentException({ message: 'adapterFactory is not supported by opensandbox-node' });
    }
    const config = toConfig(opts.connectionConfig);
    const args = {
      image: opts.image,
      snapshotId: opts.snapshotId,
      entrypoint: opts.entrypoint,
      env: opts.env,
      metadata: opts.metadata,
      networkPolicy: opts.networkPolicy,
      credentialProxy: opts.credentialProxy,
      volumes: opts.volumes,
      extensions: opts.extensions,
      platform: opts.platform,
      secureAccess: opts.secureAccess,
      resource: opts.resource,
      manualCleanup: opts.timeoutSeconds === null,
      timeoutSeconds: opts.timeoutSeconds ?? undefined,
      ...connectArgs(opts),
    };
    const nat = await call(native.NativeSandbox.create(config._native(), J(args)));
    const sbx = new Sandbox(config, nat);
    if (typeof opts.healthCheck === 'function' && !opts.skipHealthCheck) {
      try {
        await sbx.waitUntilReady({
          readyTimeoutSeconds: opts.readyTimeoutSeconds ?? DEFAULT_READY_TIMEOUT_SECONDS,
          pollingIntervalMillis: opts.healthCheckPollingInterval ?? DEFAULT_HEALTH_CHECK_POLLING_INTERVAL_MILLIS,
          healthCheck: opts.healthCheck,
        });
      } catch (e) {
        await sbx.kill().catch(() => {});
        throw e;
      }
    }
    return sbx;
  }

  static async connect(opts) {
    const config = toConfig(opts.connectionConfig);
    const nat = await call(native.NativeSandbox.connect(config._native(), opts.sandboxId, J(connectArgs(opts))));
    const sbx = new Sandbox(config, nat);
    await sbx._customReady(opts);
    return sbx;
  }

  static async resume(opts) {
    const config = toConfig(opts.connectionConfig);
    const nat = await call(native.NativeSandbox.resume(config._native(), opts.sandboxId, J(connectArgs(opts))));
    const sbx = new Sandbox(config, nat);
    await sbx._customReady(opts);
    return sbx;
  }

  async _customReady(opts) {
    if (typeof opts.healthCheck === 'function' && !opts.skipHealthCheck) {
      await this.waitUntilReady({
        readyTimeoutSeconds: opts.readyTimeoutSeconds ?? DEFAULT_READY_TIMEOUT_SECONDS,
        pollingIntervalMillis: opts.healthCheckPollingInterval ?? DEFAULT_HEALTH_CHECK_POLLING_INTERVAL_MILLIS,
        healthCheck: opts.healthCheck,
      });
    }
  }

  async getInfo() {
    return sandboxInfo(await this._call('getInfo'));
  }
  async isHealthy() {
    return this._call('isHealthy');
  }
  async getMetrics() {
    return this._call('getMetrics');
  }
  async pause() {
    await this._call('pause');
  }
  /** Resumes this sandbox and returns a new, connected handle. */
  async resume(opts = {}) {
    return Sandbox.resume({ ...opts, sandboxId: this.id, connectionConfig: this.connectionConfig });
  }
  async kill() {
    await this._call('kill');
  }
  async close() {}
  async renew(timeoutSeconds) {
    const r = await this._call('renew', { seconds: timeoutSeconds });
    return { expiresAt: date(r.expiresAt) };
  }
  async patchMetadata(patch) {
    return sandboxInfo(await this._call('patchMetadata', { patch }));
  }
  async getEgressPolicy() {
    return policy(await this._call('getEgressPolicy'));
  }
  async patchEgressRules(rules) {
    await this._call('patchEgressRules', { rules });
  }
  async deleteEgressRules(targets) {
    await this._call('deleteEgressRules', { targets });
  }
  async getEndpoint(port) {
    return this._call('getEndpoint', { port });
  }
  async getSignedEndpoint(port, expires) {
    return this._call('getSignedEndpoint', { port, expires });
  }
  async getEndpointUrl(port) {
    const e = await this.getEndpoint(port);
    return /^https?:\/\//i.test(e.endpoint) ? e.endpoint : `${this.connectionConfig.protocol}://${e.endpoint}`;
  }
  /** Extension: snapshot of this sandbox (official: `sandbox.sandboxes.createSnapshot`). */
  async createSnapshot(req = {}) {
    return snapshotInfo(await this._call('createSnapshot', { name: req.name }));
  }
  /** Extension: diagnostic logs. */
  async getDiagnosticLogs(scope) {
    return this._call('getDiagnosticLogs', { scope });
  }
  /** Extension: diagnostic events. */
  async getDiagnosticEvents(scope) {
    return this._call('getDiagnosticEvents', { scope });
  }

  async waitUntilReady(opts) {
    const deadline = Date.now() + opts.readyTimeoutSeconds * 1000;
    const check = opts.healthCheck ?? ((s) => s.isHealthy());
    let lastErr;
    for (;;) {
      try {
        if (await check(this)) return;
      } catch (e) {
        lastErr = e;
      }
      if (Date.now() >= deadline) {
        throw new SandboxReadyTimeoutException({
          message:
            `Sandbox ${this.id} did not become ready within ${opts.readyTimeoutSeconds}s ` +
            `(domain ${this.connectionConfig.domain}, useServerProxy=${this.connectionConfig.useServerProxy}). ` +
            'Check that the server can reach the sandbox, or raise readyTimeoutSeconds.',
          cause: lastErr,
        });
      }
      await sleep(opts.pollingIntervalMillis);
    }
  }
}

// ---------------------------------------------------------------------------------
// code interpreter (the official @alibaba-group/opensandbox-code-interpreter surface)

const SupportedLanguages = Object.freeze({
  PYTHON: 'python',
  JAVA: 'java',
  GO: 'go',
  TYPESCRIPT: 'typescript',
  JAVASCRIPT: 'javascript',
  BASH: 'bash',
});

function ctx(c) {
  return { id: c.id ?? undefined, language: c.language, ...(c.cwd ? { cwd: c.cwd } : {}) };
}

class Codes {
  constructor(sbx) {
    Object.defineProperty(this, '_s', { value: sbx, enumerable: false });
  }
  async createContext(language, opts = {}) {
    return ctx(await this._s._call('createContext', { language, cwd: opts.cwd }));
  }
  async getContext(contextId) {
    return ctx(await this._s._call('getContext', { id: contextId }));
  }
  async listContexts(language) {
    return (await this._s._call('listContexts', { language })).map(ctx);
  }
  async deleteContext(contextId) {
    await this._s._call('deleteContext', { id: contextId });
  }
  async deleteContexts(language) {
    await this._s._call('deleteContexts', { language });
  }
  _args(code, context, language) {
    let c = context;
    if (!c && language) c = { language };
    if (c && !c.language) c = { ...c, language: SupportedLanguages.PYTHON };
    return { code, context: c ? { id: c.id, language: c.language } : { language: SupportedLanguages.PYTHON } };
  }
  runStream(req, signal) {
    const a = this._args(req.code, req.context, req.language);
    return wireEvents(() => this._s._n.runStream('code', J(a)), signal);
  }
  async run(code, opts = {}) {
    const a = this._args(code, opts.context, opts.language);
    return consume(() => this._s._n.runStream('code', J(a)), opts.handlers, opts.signal, false);
  }
  async interrupt(executionId) {
    await this._s._call('interruptCode', { id: executionId });
  }
}

class CodeInterpreter {
  constructor(sandbox) {
    this.sandbox = sandbox;
    this.codes = new Codes(sandbox);
  }
  static async create(sandbox, opts = {}) {
    if (opts.adapterFactory) {
      throw new InvalidArgumentException({ message: 'adapterFactory is not supported by opensandbox-node' });
    }
    return new CodeInterpreter(sandbox);
  }
  get id() {
    return this.sandbox.id;
  }
  get files() {
    return this.sandbox.files;
  }
  get commands() {
    return this.sandbox.commands;
  }
  get metrics() {
    return this.sandbox.metrics;
  }
}

module.exports = {
  ConnectionConfig,
  Sandbox,
  SandboxManager,
  ExecdCommands,
  SandboxFiles,
  ExecdHealth,
  ExecdMetrics,
  ExecutionEventDispatcher,
  CodeInterpreter,
  Codes,
  SupportedLanguages,
  SandboxError: errors.SandboxError,
  SandboxException: errors.SandboxException,
  SandboxApiException: errors.SandboxApiException,
  SandboxInternalException: errors.SandboxInternalException,
  SandboxUnhealthyException: errors.SandboxUnhealthyException,
  SandboxReadyTimeoutException: errors.SandboxReadyTimeoutException,
  InvalidArgumentException: errors.InvalidArgumentException,
  DEFAULT_EXECD_PORT,
  DEFAULT_EGRESS_PORT,
  DEFAULT_ENTRYPOINT,
  DEFAULT_RESOURCE_LIMITS,
  DEFAULT_TIMEOUT_SECONDS,
  DEFAULT_READY_TIMEOUT_SECONDS,
  DEFAULT_HEALTH_CHECK_POLLING_INTERVAL_MILLIS,
  DEFAULT_REQUEST_TIMEOUT_SECONDS,
  VERSION,
};
