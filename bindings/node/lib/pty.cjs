'use strict';
// PTY sessions (`sandbox.pty`) and the live follow of a background command's log, over
// the op layer's `pty.*` and `commands.follow_logs` ops. Not in the official npm SDK
// (0.1.11 has no PTY); method names follow the official Kotlin `Pty` service.

const { call, fromNative } = require('./errors.cjs');

/** A failed `end` item of a pulled stream as the official exception. */
function endError(p = {}) {
  return fromNative(new Error(`\u0001OSB${JSON.stringify({
    kind: p.kind, status: p.status, code: p.code, requestId: p.request_id, message: p.message, operation: p.operation,
  })}`));
}

function clean(o) {
  const out = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v;
  return out;
}

/** One `PtyConnection.read`: bytes (a Buffer), offsets and what else happened. */
function ptyRead(r) {
  return {
    data: Buffer.from(r.data_b64, 'base64'),
    get text() {
      return this.data.toString('utf8');
    },
    offset: r.offset,
    nextOffset: r.next_offset,
    channel: r.channel,
    exitCode: r.exit_code,
    closed: r.closed,
    closeCode: r.close_code,
    timedOut: r.timed_out,
    done: r.done,
  };
}

/**
 * An attached PTY session. `for await (const chunk of conn)` yields
 * `{data: Buffer, offset, channel}`; `write` types, `resize`, `signal`, `close`
 * detaches (the shell keeps running: reattach with `since: conn.nextOffset`).
 */
class PtyConnection {
  /** @internal */
  constructor(n, handle, sessionId, mode, since) {
    Object.defineProperty(this, '_n', { value: n, enumerable: false });
    Object.defineProperty(this, '_h', { value: handle, enumerable: false, writable: true });
    this.sessionId = sessionId;
    this.mode = mode;
    this.nextOffset = since;
    this.exitCode = undefined;
    this.closeCode = undefined;
    this._done = false;
  }

  async _op(op, args) {
    return call(this._n.call(op, clean({ ...args, handle: this._h })));
  }

  /**
   * One read: what has arrived (one channel at a time); with `until` all output until
   * it contains that text; with `untilExit` until the shell exits and the connection
   * closes; `timeoutMs` bounds the wait (`timedOut` then).
   */
  async read(opts = {}) {
    const r = ptyRead(await this._op('pty.read', {
      until: opts.until,
      until_exit: opts.untilExit || undefined,
      wait_ms: opts.timeoutMs,
    }));
    this.nextOffset = r.nextOffset;
    if (r.exitCode != null) this.exitCode = r.exitCode;
    if (r.closeCode != null) this.closeCode = r.closeCode;
    this._done = r.done;
    return r;
  }

  async *[Symbol.asyncIterator]() {
    while (!this._done && this._h !== 0) {
      const r = await this.read();
      if (r.data.length > 0) yield { data: r.data, offset: r.offset, channel: r.channel };
    }
  }

  /** Input: a Buffer/Uint8Array, or a string sent as UTF-8 (`'\r'` is Enter). */
  async write(data) {
    if (typeof data === 'string') return void (await this._op('pty.write', { text: data }));
    return void (await this._op('pty.write', { data_b64: Buffer.from(data).toString('base64') }));
  }

  async resize(cols, rows) {
    await this._op('pty.resize', { cols, rows });
  }

  /** `SIGINT`, `SIGTERM`, `SIGKILL`, `SIGQUIT` or `SIGHUP` to the shell's group. */
  async signal(name) {
    await this._op('pty.signal', { signal: name });
  }

  /** Detaches; resolves to the offset to pass as `since` to resume exactly here. */
  async close() {
    if (this._h === 0) return this.nextOffset;
    const r = await this._op('pty.close', {});
    this._h = 0;
    this._done = true;
    this.nextOffset = r.next_offset;
    return this.nextOffset;
  }
}

/** `sandbox.pty`: interactive terminal sessions with a 1 MiB replay buffer. */
class ExecdPty {
  constructor(sbx) {
    Object.defineProperty(this, '_s', { value: sbx, enumerable: false });
  }

  /** Creates a session (its shell starts on the first attach); resolves to its id. */
  async createSession(opts = {}) {
    const r = await this._s._call('pty.create', { cwd: opts.cwd, command: opts.command });
    return r.session_id;
  }

  /** `{sessionId, running, outputOffset}`. */
  async getSession(sessionId) {
    const r = await this._s._call('pty.get', { session_id: sessionId });
    return { sessionId: r.session_id, running: r.running, outputOffset: r.output_offset };
  }

  async deleteSession(sessionId) {
    await this._s._call('pty.delete', { session_id: sessionId });
  }

  /**
   * Attaches over the WebSocket. `since` (default 0) replays what is still buffered
   * from that offset; `mode` (`'pty'`/`'pipe'`) counts only if this attach starts the
   * shell; a session held by another client rejects with a SandboxApiException (409
   * `ALREADY_CONNECTED`) unless `takeover`.
   */
  async attach(sessionId, opts = {}) {
    const r = await this._s._call('pty.attach', {
      session_id: sessionId,
      since: opts.since,
      mode: opts.mode,
      takeover: opts.takeover,
    });
    return new PtyConnection(this._s._n, r.handle, sessionId, r.mode, r.since);
  }

  /**
   * A background command's output as it is written, from any process that knows its
   * id: `{offset, data: Buffer}` chunks, each starting where the previous ended; ends
   * when the command finished and everything it wrote was returned.
   */
  async *followLogs(executionId, opts = {}) {
    const { handle } = await this._s._call('commands.follow_logs', {
      id: executionId,
      cursor: opts.cursor,
      interval_ms: opts.intervalMs,
    });
    const n = this._s._n;
    try {
      for (;;) {
        const batch = await call(n.call('execution.next_batch', { handle }));
        for (const item of batch.events) {
          if (item.type === 'log') yield { offset: item.offset, data: Buffer.from(item.data_b64, 'base64') };
          else if (item.type === 'end' && !item.ok) throw endError(item.error);
        }
        if (batch.done) return;
      }
    } finally {
      await call(n.call('release', { handle })).catch(() => {});
    }
  }
}

module.exports = { ExecdPty, PtyConnection };
