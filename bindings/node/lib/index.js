'use strict';
// opensandbox for Node: a drop-in for @alibaba-group/opensandbox over the Rust core.
// Every network call is an op of the one op layer (bindings/common, through the native
// addon, lib/native.js), with arguments and results in its spelling (snake_case); this
// file builds the official classes, option bags, shapes and exceptions on top of it.

const native = require('./native.js');
const errors = require('./errors.js');
const { ExecdPty, PtyConnection } = require('./pty.js');
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

/** A copy of `o` without its undefined values (nested objects and arrays too). */
function clean(o) {
  if (Array.isArray(o)) return o.map(clean);
  if (o === null || typeof o !== 'object' || o instanceof Date) return o;
  const out = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = clean(v);
  return out;
}

/** Seconds → whole milliseconds (the op layer's `*_ms`), undefined stays undefined. */
const ms = (s) => (s == null ? undefined : Math.round(s * 1000));

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

  /** @internal the native session (one connection pool per ConnectionConfig). */
  _native() {
    if (!this._nativeConfig) {
      try {
        this._nativeConfig = new native.NativeConfig({
          domain: `${this.protocol}://${this.domain}`,
          protocol: this.protocol,
          api_key: this.apiKey ?? '',
          headers: this._userHeaders,
          request_timeout_s: this.requestTimeoutSeconds,
          use_server_proxy: this.useServerProxy,
          user_agent: this.userAgent,
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

// op-layer results (snake_case, RFC 3339 strings) → the official shapes

function sandboxInfo(i) {
  if (!i) return i;
  const out = {
    id: i.id,
    status: {
      state: i.status.state,
      reason: i.status.reason ?? undefined,
      message: i.status.message ?? undefined,
      lastTransitionAt: date(i.status.last_transition_at),
    },
    entrypoint: i.entrypoint ?? [],
    metadata: i.metadata ?? {},
    createdAt: date(i.created_at),
    expiresAt: dateOrNull(i.expires_at),
  };
  if (i.image) out.image = i.image;
  if (i.snapshot_id != null) out.snapshotId = i.snapshot_id;
  if (i.platform) out.platform = i.platform;
  if (i.extensions && Object.keys(i.extensions).length) out.extensions = i.extensions;
  return out;
}

function snapshotInfo(s) {
  return {
    id: s.id,
    sandboxId: s.sandbox_id,
    name: s.name ?? undefined,
    status: {
      state: s.status.state,
      reason: s.status.reason ?? undefined,
      message: s.status.message ?? undefined,
      lastTransitionAt: date(s.status.last_transition_at),
    },
    createdAt: date(s.created_at),
  };
}

function fileInfo(e) {
  return {
    path: e.path,
    type: e.type,
    size: e.size,
    modifiedAt: date(e.modified_at),
    createdAt: date(e.created_at),
    mode: e.mode,
    owner: e.owner,
    group: e.group,
  };
}

function policy(p) {
  const out = {};
  if (p.default_action != null) out.defaultAction = p.default_action;
  out.egress = p.egress ?? [];
  return out;
}

function pagination(p) {
  if (!p) return p;
  return {
    page: p.page,
    pageSize: p.page_size,
    totalItems: p.total_items,
    totalPages: p.total_pages,
    hasNextPage: p.has_next_page,
  };
}

function metrics(m) {
  return {
    cpuCount: m.cpu_count,
    cpuUsedPercentage: m.cpu_used_percentage,
    memoryTotalMiB: m.memory_total_in_mib,
    memoryUsedMiB: m.memory_used_in_mib,
    timestamp: m.timestamp,
  };
}

function diagnostic(d) {
  return {
    sandboxId: d.sandbox_id,
    kind: d.kind,
    scope: d.scope,
    delivery: d.delivery,
    contentType: d.content_type,
    truncated: d.truncated,
    content: d.content,
    contentUrl: d.content_url,
    contentLength: d.content_length,
    expiresAt: d.expires_at,
    warnings: d.warnings,
  };
}

const endpoint = (e) => ({ endpoint: e.endpoint, headers: e.headers });

/** Official filters → the op layer's (`pageSize` → `page_size`). */
function filterArgs(f = {}) {
  return { states: f.states, metadata: f.metadata, page: f.page, page_size: f.pageSize ?? f.page_size };
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
      nat = config._native();
    } catch (e) {
      throw fromNative(e);
    }
    return new SandboxManager(config, nat);
  }

  async _call(op, args) {
    return call(this._n.call(op, clean(args ?? {})));
  }

  async listSandboxInfos(filter = {}) {
    const r = await this._call('manager.list_sandbox_infos', filterArgs(filter));
    return { items: r.sandbox_infos.map(sandboxInfo), pagination: pagination(r.pagination) };
  }
  async getSandboxInfo(sandboxId) {
    return sandboxInfo(await this._call('manager.get_sandbox_info', { sandbox_id: sandboxId }));
  }
  async patchSandboxMetadata(sandboxId, patch) {
    return sandboxInfo(await this._call('manager.patch_sandbox_metadata', { sandbox_id: sandboxId, patch }));
  }
  async killSandbox(sandboxId) {
    await this._call('manager.kill_sandbox', { sandbox_id: sandboxId });
  }
  async pauseSandbox(sandboxId) {
    await this._call('manager.pause_sandbox', { sandbox_id: sandboxId });
  }
  async resumeSandbox(sandboxId) {
    await this._call('manager.resume_sandbox', { sandbox_id: sandboxId });
  }
  async renewSandbox(sandboxId, timeoutSeconds) {
    await this._call('manager.renew_sandbox', { sandbox_id: sandboxId, seconds: timeoutSeconds });
  }
  async createSnapshot(sandboxId, req = {}) {
    return snapshotInfo(await this._call('manager.create_snapshot', { sandbox_id: sandboxId, name: req.name }));
  }
  async getSnapshot(snapshotId) {
    return snapshotInfo(await this._call('manager.get_snapshot', { snapshot_id: snapshotId }));
  }
  async listSnapshots(filter = {}) {
    const { sandboxId, ...rest } = filter;
    const r = await this._call('manager.list_snapshots', { ...filterArgs(rest), sandbox_id: sandboxId, metadata: undefined });
    return { items: r.snapshot_infos.map(snapshotInfo), pagination: pagination(r.pagination) };
  }
  async deleteSnapshot(snapshotId) {
    await this._call('manager.delete_snapshot', { snapshot_id: snapshotId });
  }
  /** Extension: the endpoint of `port` in a sandbox. */
  async getEndpoint(sandboxId, port) {
    return endpoint(await this._call('manager.get_endpoint', { sandbox_id: sandboxId, port }));
  }
  /** Extension: diagnostic logs of a sandbox (`scope` e.g. "lifecycle"). */
  async getDiagnosticLogs(sandboxId, scope) {
    return diagnostic(await this._call('manager.get_diagnostic_logs', { sandbox_id: sandboxId, scope: scope ?? '' }));
  }
  /** Extension: diagnostic events of a sandbox. */
  async getDiagnosticEvents(sandboxId, scope) {
    return diagnostic(await this._call('manager.get_diagnostic_events', { sandbox_id: sandboxId, scope: scope ?? '' }));
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
 * Pulls batches of a started run; closes (releases) it on abort and at the end. A
 * batch is `{meta, text, last}`: `meta` a JSON array where output lines are
 * `[1|2, ts, len]` (stdout|stderr; their texts concatenated in `text`) and other
 * items are the op layer's event objects, the last one the run's `end` item.
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
    const meta = JSON.parse(batch.meta);
    const text = batch.text;
    let off = 0;
    for (const item of meta) {
      if (Array.isArray(item)) {
        const end = off + item[2];
        yield { type: item[0] === 1 ? 'stdout' : 'stderr', text: text.slice(off, end), timestamp: item[1] };
        off = end;
      } else if (item.type === 'end') {
        if (!item.ok) throw endError(item);
        return;
      } else yield wireEvent(item);
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
    const meta = JSON.parse(batch.meta);
    const text = batch.text;
    let off = 0;
    for (let i = 0; i < meta.length; i++) {
      const item = meta[i];
      if (Array.isArray(item)) {
        const stop = off + item[2];
        const isErr = item[0] === 2;
        const t = text.slice(off, stop);
        off = stop;
        if (h.onEvent) {
          await d.dispatch({ type: isErr ? 'stderr' : 'stdout', text: t, timestamp: item[1] });
          continue;
        }
        const f = isErr ? onStderr : onStdout;
        if (f) {
          const r = f({ text: t, timestamp: item[1], isError: isErr });
          if (r && typeof r.then === 'function') await r;
        }
      } else if (item.type === 'end') {
        end = item;
      } else {
        await d.dispatch(wireEvent(item));
      }
    }
  }
  return executionOf(end, foreground);
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

class ExecdCommands {
  constructor(sbx) {
    Object.defineProperty(this, '_s', { value: sbx, enumerable: false });
  }

  _open(op, args) {
    return (events, skip) => this._s._n.runStream(op, startArgs(this._s, args, events, skip));
  }

  runStream(command, opts, signal) {
    return wireEvents(() => this._open('commands.start', runArgs(command, opts))(true, true), signal);
  }

  async run(command, opts, handlers, signal) {
    return consume(this._open('commands.start', runArgs(command, opts)), handlers, signal, !(opts && opts.background));
  }

  async interrupt(sessionId) {
    await this._s._call('commands.interrupt', { id: sessionId });
  }

  async getCommandStatus(commandId) {
    const s = await this._s._call('commands.get_command_status', { id: commandId });
    return {
      id: s.id,
      content: s.content ?? undefined,
      running: s.running,
      exitCode: s.exit_code ?? null,
      error: s.error ?? undefined,
      startedAt: date(s.started_at),
      finishedAt: dateOrNull(s.finished_at),
    };
  }

  async getBackgroundCommandLogs(commandId, cursor) {
    const l = await this._s._call('commands.get_background_command_logs', { id: commandId, cursor });
    return { content: l.content, cursor: l.cursor ?? undefined };
  }

  async createSession(options = {}) {
    const r = await this._s._call('commands.create_session', { working_directory: options.workingDirectory });
    return r.session_id;
  }

  _sessionArgs(sessionId, command, options) {
    return {
      session_id: sessionId,
      command,
      working_directory: options.workingDirectory,
      timeout_ms: ms(options.timeoutSeconds),
    };
  }

  /** Extension: the raw event stream of a session run. */
  runInSessionStream(sessionId, command, options = {}, signal) {
    const open = this._open('commands.start_in_session', this._sessionArgs(sessionId, command, options));
    return wireEvents(() => open(true, true), signal);
  }

  async runInSession(sessionId, command, options = {}, handlers, signal) {
    const open = this._open('commands.start_in_session', this._sessionArgs(sessionId, command, options));
    return consume(open, handlers, signal, true);
  }

  async deleteSession(sessionId) {
    await this._s._call('commands.delete_session', { session_id: sessionId });
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

const permEntry = (e) => ({ path: e.path, mode: e.mode, owner: e.owner, group: e.group });
const replaceEntry = (e) => ({
  path: e.path,
  old_content: e.oldContent ?? e.old_content,
  new_content: e.newContent ?? e.new_content,
});
const readArgs = (sbx, path, opts) => clean({ sandbox: sbx._h, path, range: opts.range, offset: opts.offset, limit: opts.limit });

class SandboxFiles {
  constructor(sbx) {
    Object.defineProperty(this, '_s', { value: sbx, enumerable: false });
  }

  async getFileInfo(paths) {
    const r = await this._s._call('files.get_file_info', { paths });
    const out = {};
    for (const [k, v] of Object.entries(r)) out[k] = fileInfo(v);
    return out;
  }
  async search(entry) {
    return (await this._s._call('files.search', { path: entry.path, pattern: entry.pattern })).map(fileInfo);
  }
  async listDirectory(entry) {
    return (await this._s._call('files.list_directory', { path: entry.path, depth: entry.depth })).map(fileInfo);
  }
  async createDirectories(entries) {
    await this._s._call('files.create_directories', { entries: entries.map(permEntry) });
  }
  async deleteDirectories(paths) {
    await this._s._call('files.delete_directories', { paths });
  }
  async deleteFiles(paths) {
    await this._s._call('files.delete_files', { paths });
  }
  async moveFiles(entries) {
    await this._s._call('files.move_files', { entries: entries.map((e) => ({ src: e.src, dest: e.dest })) });
  }
  async replaceContents(entries) {
    await this._s._call('files.replace_contents', { entries: entries.map(replaceEntry) });
  }
  async replaceContentsDetailed(entries) {
    const r = await this._s._call('files.replace_contents_detailed', { entries: entries.map(replaceEntry) });
    return r.map((x) => ({ path: x.path, replacedCount: x.replaced_count }));
  }
  async setPermissions(entries) {
    await this._s._call('files.set_permissions', { entries: entries.map(permEntry) });
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
      meta.push(permEntry(e));
      buffers.push(b === null ? null : b);
      if (b === null) streamed.push(i);
    });
    let up;
    try {
      up = this._s._n.upload(clean({ sandbox: this._s._h, entries: meta }), buffers);
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
    return (await this._s._call('files.read_file', { path, range: opts.range, offset: opts.offset, limit: opts.limit })).text;
  }

  async readBytes(path, opts = {}) {
    const b = await call(this._s._n.readBytes(readArgs(this._s, path, opts)));
    return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  }

  async *readBytesStream(path, opts = {}) {
    const signal = opts.signal;
    const s = await call(this._s._n.readStream(readArgs(this._s, path, opts)));
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
    return (await this._s._call('sandbox.is_healthy', {})).healthy;
  }
}

class ExecdMetrics {
  constructor(sbx) {
    Object.defineProperty(this, '_s', { value: sbx, enumerable: false });
  }
  async getMetrics() {
    return metrics(await this._s._call('sandbox.get_metrics', {}));
  }
  /** Extension: `GET /metrics/watch` as an async iterable of SandboxMetrics. */
  async *watchMetrics(signal) {
    const s = await call(this._s._n.watchMetrics({ sandbox: this._s._h }));
    const onAbort = () => s.close();
    if (signal) signal.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        const m = await call(s.next());
        if (signal && signal.aborted) throw abortError(signal);
        if (m == null) return;
        yield metrics(m);
      }
    } finally {
      if (signal) signal.removeEventListener('abort', onAbort);
      s.close();
    }
  }
}

// ---------------------------------------------------------------------------------
// Sandbox

/** Readiness arguments of create / connect / resume (`timeoutKey` names the wait). */
function connectArgs(o = {}, timeoutKey = 'ready_timeout_s') {
  return {
    skip_health_check: !!o.skipHealthCheck || typeof o.healthCheck === 'function',
    [timeoutKey]: o.readyTimeoutSeconds,
    health_check_polling_interval_s:
      o.healthCheckPollingInterval == null ? undefined : o.healthCheckPollingInterval / 1000,
  };
}

/** Releases the session handle of a Sandbox object once it is garbage. */
const handles = new FinalizationRegistry(({ n, h }) => n.release(h));

function unsupported(name, v) {
  if (v == null || v === false) return;
  if (Array.isArray(v) && v.length === 0) return;
  throw new InvalidArgumentException({ message: `${name} is not supported by opensandbox-node yet` });
}

function imageArg(image) {
  if (image == null || typeof image === 'string') return image;
  return image.uri;
}

/** `image.auth` → the op layer's `image_auth` (the core has username/password only). */
function imageAuthArg(image) {
  if (image == null || typeof image === 'string' || image.auth == null) return undefined;
  const a = image.auth;
  unsupported('image.auth.token', a.token);
  return { username: a.username, password: a.password };
}

function volumeArg(v) {
  const h = v.host;
  const p = v.pvc;
  const o = v.ossfs;
  return {
    name: v.name,
    mount_path: v.mountPath,
    read_only: v.readOnly ?? undefined,
    sub_path: v.subPath ?? undefined,
    host: h == null ? undefined : { path: h.path },
    pvc: p == null ? undefined : {
      claim_name: p.claimName,
      create_if_not_exists: p.createIfNotExists ?? undefined,
      delete_on_sandbox_termination: p.deleteOnSandboxTermination ?? undefined,
      storage_class: p.storageClass ?? undefined,
      storage: p.storage ?? undefined,
      access_modes: p.accessModes ?? undefined,
    },
    ossfs: o == null ? undefined : {
      bucket: o.bucket,
      endpoint: o.endpoint,
      access_key_id: o.accessKeyId,
      access_key_secret: o.accessKeySecret,
      version: o.version ?? undefined,
      options: o.options ?? undefined,
    },
  };
}

function stringMap(m) {
  if (m == null) return undefined;
  const out = {};
  for (const [k, v] of Object.entries(m)) out[k] = typeof v === 'string' ? v : JSON.stringify(v);
  return out;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

class Sandbox {
  /** @internal `opened` is the op layer's `{id, handle}` of create / connect / resume. */
  constructor(config, opened) {
    this.id = opened.id;
    this.connectionConfig = config;
    const n = config._native();
    Object.defineProperty(this, '_n', { value: n, enumerable: false });
    Object.defineProperty(this, '_h', { value: opened.handle, enumerable: false });
    handles.register(this, { n, h: opened.handle });
    Object.defineProperty(this, '_manager', { value: null, enumerable: false, writable: true });
    this.commands = new ExecdCommands(this);
    this.files = new SandboxFiles(this);
    this.health = new ExecdHealth(this);
    this.metrics = new ExecdMetrics(this);
    this.pty = new ExecdPty(this);
  }

  /** The lifecycle service (a SandboxManager over the same configuration). */
  get sandboxes() {
    if (!this._manager) this._manager = SandboxManager.create({ connectionConfig: this.connectionConfig });
    return this._manager;
  }

  async _call(op, args) {
    return call(this._n.call(op, clean({ ...(args ?? {}), sandbox: this._h })));
  }

  static async create(opts = {}) {
    if (opts.adapterFactory) {
      throw new InvalidArgumentException({ message: 'adapterFactory is not supported by opensandbox-node' });
    }
    const image = imageArg(opts.image);
    if ((image == null) === (opts.snapshotId == null)) {
      throw new InvalidArgumentException({ message: 'exactly one of image or snapshotId must be given' });
    }
    const config = toConfig(opts.connectionConfig);
    const p = opts.networkPolicy;
    const args = {
      image,
      snapshot_id: opts.snapshotId,
      entrypoint: opts.entrypoint,
      env: opts.env ?? undefined,
      metadata: opts.metadata ?? undefined,
      network_policy: p == null ? undefined : {
        default_action: p.defaultAction,
        egress: (p.egress ?? []).map((r) => ({ action: r.action, target: r.target })),
      },
      extensions: stringMap(opts.extensions),
      image_auth: imageAuthArg(opts.image),
      platform: opts.platform == null ? undefined : { os: opts.platform.os, arch: opts.platform.arch },
      credential_proxy: opts.credentialProxy == null ? undefined : { enabled: opts.credentialProxy.enabled ?? undefined },
      volumes: opts.volumes == null ? undefined : opts.volumes.map(volumeArg),
      secure_access: opts.secureAccess ?? undefined,
      resource: opts.resource ?? undefined,
      // null = no expiry (manual cleanup); absent = the default.
      timeout_s: opts.timeoutSeconds,
      ...connectArgs(opts),
    };
    const opened = await call(config._native().call('sandbox.create', clean(args)));
    const sbx = new Sandbox(config, opened);
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
    const args = { sandbox_id: opts.sandboxId, ...connectArgs(opts, 'connect_timeout_s') };
    const sbx = new Sandbox(config, await call(config._native().call('sandbox.connect', clean(args))));
    await sbx._customReady(opts);
    return sbx;
  }

  static async resume(opts) {
    const config = toConfig(opts.connectionConfig);
    const args = { sandbox_id: opts.sandboxId, ...connectArgs(opts, 'resume_timeout_s') };
    const sbx = new Sandbox(config, await call(config._native().call('sandbox.resume', clean(args))));
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
    return sandboxInfo(await this._call('sandbox.get_info'));
  }
  async isHealthy() {
    return (await this._call('sandbox.is_healthy')).healthy;
  }
  async getMetrics() {
    return metrics(await this._call('sandbox.get_metrics'));
  }
  async pause() {
    await this._call('sandbox.pause');
  }
  /** Resumes this sandbox and returns a new, connected handle. */
  async resume(opts = {}) {
    return Sandbox.resume({ ...opts, sandboxId: this.id, connectionConfig: this.connectionConfig });
  }
  async kill() {
    await this._call('sandbox.kill');
  }
  async close() {}
  async renew(timeoutSeconds) {
    const r = await this._call('sandbox.renew', { seconds: timeoutSeconds });
    return { expiresAt: date(r.expires_at) };
  }
  async patchMetadata(patch) {
    return sandboxInfo(await this._call('sandbox.patch_metadata', { patch }));
  }
  async getEgressPolicy() {
    return policy(await this._call('sandbox.get_egress_policy'));
  }
  async patchEgressRules(rules) {
    await this._call('sandbox.patch_egress_rules', { rules: rules.map((r) => ({ action: r.action, target: r.target })) });
  }
  async deleteEgressRules(targets) {
    await this._call('sandbox.delete_egress_rules', { targets });
  }
  async getEndpoint(port) {
    return endpoint(await this._call('sandbox.get_endpoint', { port }));
  }
  async getSignedEndpoint(port, expires) {
    return endpoint(await this._call('sandbox.get_signed_endpoint', { port, expires }));
  }
  async getEndpointUrl(port) {
    const e = await this.getEndpoint(port);
    return /^https?:\/\//i.test(e.endpoint) ? e.endpoint : `${this.connectionConfig.protocol}://${e.endpoint}`;
  }
  /** Extension: snapshot of this sandbox (official: `sandbox.sandboxes.createSnapshot`). */
  async createSnapshot(req = {}) {
    return snapshotInfo(await this._call('sandbox.create_snapshot', { name: req.name }));
  }
  /** Extension: diagnostic logs. */
  async getDiagnosticLogs(scope) {
    return diagnostic(await this._call('sandbox.get_diagnostic_logs', { scope: scope ?? '' }));
  }
  /** Extension: diagnostic events. */
  async getDiagnosticEvents(scope) {
    return diagnostic(await this._call('sandbox.get_diagnostic_events', { scope: scope ?? '' }));
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
    return ctx(await this._s._call('code.create_context', { language, cwd: opts.cwd }));
  }
  async getContext(contextId) {
    return ctx(await this._s._call('code.get_context', { context_id: contextId }));
  }
  async listContexts(language) {
    return (await this._s._call('code.list_contexts', { language })).map(ctx);
  }
  async deleteContext(contextId) {
    await this._s._call('code.delete_context', { context_id: contextId });
  }
  async deleteContexts(language) {
    await this._s._call('code.delete_contexts', { language });
  }
  /** A context object (with an id) runs in that context, else in the language's default one. */
  _args(code, context, language) {
    if (context && context.id) return { code, context_id: context.id };
    return { code, language: (context && context.language) || language || SupportedLanguages.PYTHON };
  }
  _open(a) {
    return (events, skip) => this._s._n.runStream('code.start', startArgs(this._s, a, events, skip));
  }
  runStream(req, signal) {
    const open = this._open(this._args(req.code, req.context, req.language));
    return wireEvents(() => open(true, true), signal);
  }
  async run(code, opts = {}) {
    return consume(this._open(this._args(code, opts.context, opts.language)), opts.handlers, opts.signal, false);
  }
  async interrupt(executionId) {
    await this._s._call('code.interrupt', { id: executionId });
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
  ExecdPty,
  PtyConnection,
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
