'use strict';
// (1.1) `sandbox.isolation`: isolated sessions (nested sandboxes inside a sandbox) over
// the op layer's `isolation.*` ops. Models keep the official wire spelling (snake_case
// keys, RFC 3339 strings), as the official IsolationService returns them.

const { InvalidArgumentException } = require('./errors.cjs');
const { consume, startArgs } = require('./executions.cjs');
const { SandboxFiles } = require('./files.cjs');

/** A copy without null values (the official models leave absent fields out). */
function present(o) {
  if (Array.isArray(o)) return o.map(present);
  if (o === null || typeof o !== 'object') return o;
  const out = {};
  for (const [k, v] of Object.entries(o)) if (v !== null && v !== undefined) out[k] = present(v);
  return out;
}

function nonBlank(v, field) {
  if (typeof v !== 'string' || !v.trim()) throw new InvalidArgumentException({ message: `${field} cannot be empty` });
}

const runArgs = (sessionId, code, opts = {}) => ({
  session_id: sessionId,
  code,
  envs: opts.envs ?? undefined,
  timeout_s: opts.timeout_seconds ?? opts.timeoutSeconds,
});

/** One isolated session: `run`, `get`, `delete`, its `files`. */
class IsolationSession {
  constructor(sbx, info) {
    Object.defineProperty(this, '_s', { value: sbx, enumerable: false });
    Object.defineProperty(this, '_files', { value: null, enumerable: false, writable: true });
    this.info = info;
  }

  get sessionId() {
    return this.info.session_id;
  }

  /** The files routes of this session (paths resolve in the session's tree). */
  get files() {
    if (!this._files) this._files = new SandboxFiles(this._s, { isolated_session: this.sessionId });
    return this._files;
  }

  /** Runs `code` in the session's shell (state is kept between runs). */
  async run(code, opts, handlers, signal) {
    nonBlank(code, 'code');
    const s = this._s;
    const args = runArgs(this.sessionId, code, opts);
    const open = (events, skip) => s._n.runStream('isolation.start', startArgs(s, args, events, skip));
    return consume(open, handlers, signal, true);
  }

  async get() {
    return present(await this._s._call('isolation.get', { session_id: this.sessionId }));
  }

  async delete() {
    await this._s._call('isolation.delete', { session_id: this.sessionId });
  }

  /** Extension (as the Python SDK): starts `code` in the background → `{session_id, run_id, started_at}`. */
  async runBackground(code, opts) {
    nonBlank(code, 'code');
    return present(await this._s._call('isolation.run_background', runArgs(this.sessionId, code, opts)));
  }

  /** Extension: `{session_id, run_id, running, exit_code, error, started_at, finished_at}` of a background run. */
  async runStatus(runId) {
    return this._s._call('isolation.run_status', { session_id: this.sessionId, run_id: runId });
  }

  /** Extension: the log of a background run from byte `cursor` → `{text, cursor}`. */
  async runLogs(runId, cursor) {
    return this._s._call('isolation.run_logs', { session_id: this.sessionId, run_id: runId, cursor });
  }
}

/** The official IsolationService of a sandbox. */
class IsolationService {
  constructor(sbx) {
    Object.defineProperty(this, '_s', { value: sbx, enumerable: false });
  }

  /** `request`: the official CreateIsolatedSessionRequest (snake_case keys). */
  async create(request) {
    if (request == null || typeof request !== 'object') {
      throw new InvalidArgumentException({ message: 'a CreateIsolatedSessionRequest is required' });
    }
    return new IsolationSession(this._s, present(await this._s._call('isolation.create', { ...request })));
  }

  async attach(sessionId) {
    nonBlank(sessionId, 'sessionId');
    return new IsolationSession(this._s, present(await this._s._call('isolation.attach', { session_id: sessionId })));
  }

  async capabilities() {
    const c = present(await this._s._call('isolation.capabilities'));
    return { ...c, setpriv_available: c.setpriv_available ?? false, userns_available: c.userns_available ?? false };
  }

  async list() {
    return present(await this._s._call('isolation.list'));
  }

  /** Creates a session, runs `code`, deletes the session (best effort, never masking an error). */
  async runOnce(code, workspace, opts = {}) {
    const session = await this.create({
      workspace: { path: workspace, mode: opts.workspaceMode },
      profile: opts.profile,
      share_net: opts.shareNet,
      binds: opts.binds,
    });
    try {
      return await session.run(code, opts.runOpts, opts.handlers, opts.signal);
    } finally {
      await session.delete().catch(() => {});
    }
  }

  /** Creates a session, calls `fn(session)`, deletes the session whatever `fn` does. */
  async withSession(request, fn) {
    const session = await this.create(request);
    try {
      return await fn(session);
    } finally {
      await session.delete().catch(() => {});
    }
  }
}

module.exports = { IsolationService, IsolationSession };
