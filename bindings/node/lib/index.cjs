'use strict';
// opensandbox for Node: a drop-in for @alibaba-group/opensandbox over the Rust core.
// Every network call is an op of the one op layer (bindings/common, through the native
// addon, lib/native.cjs), with arguments and results in its spelling (snake_case); this
// file builds the official classes, option bags and exceptions on top of it (shapes in
// shapes.cjs, runs in executions.cjs, files in files.cjs, 1.1 services in isolation.cjs,
// vault.cjs, sandboxes.cjs, templates.cjs; the adapter factory in factory.cjs).

const native = require('./native.cjs');
const errors = require('./errors.cjs');
const { ExecdPty, PtyConnection } = require('./pty.cjs');
const { abortError, date, dateOrNull, readEnv, clean, ms, stripV1, sleep } = require('./util.cjs');
const {
  sandboxInfo, snapshotInfo, pagination, metrics, diagnostic, endpoint, filterArgs,
} = require('./shapes.cjs');
const { ExecutionEventDispatcher, wireEvents, consume, runOnce, wantsEvents, runArgs, startArgs } = require('./executions.cjs');
const { SandboxFiles } = require('./files.cjs');
const { imageArg, imageAuthArg, volumeArg, stringMap, networkPolicyArg, lifecycleArg } = require('./create.cjs');
const { IsolationService } = require('./isolation.cjs');
const { EgressService } = require('./egress.cjs');
const { SandboxesService } = require('./sandboxes.cjs');
const pool = require('./pool.cjs');
const { templateInfo, templateRequestArgs } = require('./templates.cjs');
const { DefaultAdapterFactory, createDefaultAdapterFactory, checkAdapterFactory } = require('./factory.cjs');
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
    // Options the core cannot honour fail here rather than being ignored.
    if (opts.debug) {
      throw new InvalidArgumentException({
        message: 'debug (request logging) is not supported: requests are made by the native core, which logs none',
      });
    }
    if (opts.enableTracing) {
      throw new InvalidArgumentException({
        message: 'enableTracing (OpenTelemetry spans of pool warmup) is not supported by this package',
      });
    }
    this.debug = false;
    this.enableTracing = false;
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

  /**
   * Node's own fetch bounded by `requestTimeoutSeconds`, for the caller's requests (to a
   * sandbox endpoint, say). The SDK's calls never use it: they go through the native core.
   */
  get fetch() {
    const timeoutMs = this.requestTimeoutSeconds * 1000;
    return (input, init = {}) => {
      const t = AbortSignal.timeout(timeoutMs);
      return fetch(input, { ...init, signal: init.signal ? AbortSignal.any([init.signal, t]) : t });
    };
  }

  /** Node's own fetch without a timeout (streams); not used by the SDK's own calls. */
  get sseFetch() {
    return fetch;
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

  /**
   * @internal the endpoint cache as the core's connection keys (the core rejects a
   * negative or non-integer size and a negative TTL with an InvalidArgumentException).
   */
  _endpointCacheArgs() {
    if (this.endpointCacheDisabled) return { endpoint_cache_ttl_s: 0, endpoint_cache_size: 0 };
    return { endpoint_cache_ttl_s: this.endpointCacheTtlMs / 1000, endpoint_cache_size: this.endpointCacheSize };
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
          ...this._endpointCacheArgs(),
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
// SandboxManager

class SandboxManager {
  constructor(config, nat) {
    this.connectionConfig = config;
    Object.defineProperty(this, '_n', { value: nat, enumerable: false });
  }

  static create(opts = {}) {
    checkAdapterFactory(opts.adapterFactory);
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
    const { sandboxId, name, ...rest } = filter;
    if (name != null) {
      throw new InvalidArgumentException({ message: 'listSnapshots: the name filter is not supported by opensandbox-node' });
    }
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
  /** Extension (1.1): declares a template build → TemplateInfo (phase `Pending`). */
  async createTemplate(request) {
    return templateInfo(await this._call('manager.create_template', templateRequestArgs(request)));
  }
  /** Extension (1.1): a template and its build status. */
  async getTemplate(templateId) {
    return templateInfo(await this._call('manager.get_template', { template_id: templateId }));
  }
  /** Extension (1.1): `{items: TemplateInfo[], pagination}` filtered by `metadata`. */
  async listTemplates(filter = {}) {
    const r = await this._call('manager.list_templates', { metadata: filter.metadata, page: filter.page, page_size: filter.pageSize });
    return { items: r.template_infos.map(templateInfo), pagination: pagination(r.pagination) };
  }
  /** Extension (1.1): deletes a template (its sandboxes stay). */
  async deleteTemplate(templateId) {
    await this._call('manager.delete_template', { template_id: templateId });
  }
  async close() {}
}

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
    const foreground = !(opts && opts.background);
    if (!signal && !wantsEvents(handlers)) return runOnce(this._s, 'commands.run', runArgs(command, opts), handlers, foreground);
    return consume(this._open('commands.start', runArgs(command, opts)), handlers, signal, foreground);
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
    const args = this._sessionArgs(sessionId, command, options);
    if (!signal && !wantsEvents(handlers)) return runOnce(this._s, 'commands.run_in_session', args, handlers, true);
    return consume(this._open('commands.start_in_session', args), handlers, signal, true);
  }

  async deleteSession(sessionId) {
    await this._s._call('commands.delete_session', { session_id: sessionId });
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

/**
 * (1.1) What backs a sandbox: `TEMPLATE` when it was created from a template or the
 * server's `OPEN-SANDBOX-ORIGIN` header says so (its egress policy then goes through the
 * lifecycle server and it has no credential vault); anything else is `UNKNOWN`.
 */
const SandboxOrigin = Object.freeze({ TEMPLATE: 'template', UNKNOWN: 'unknown' });

class Sandbox {
  /** @internal `opened` is the op layer's `{id, handle, origin}` of create / connect / resume. */
  constructor(config, opened) {
    this.id = opened.id;
    this.origin = opened.origin === SandboxOrigin.TEMPLATE ? SandboxOrigin.TEMPLATE : SandboxOrigin.UNKNOWN;
    this.connectionConfig = config;
    const n = config._native();
    Object.defineProperty(this, '_n', { value: n, enumerable: false });
    Object.defineProperty(this, '_h', { value: opened.handle, enumerable: false });
    handles.register(this, { n, h: opened.handle });
    this.commands = new ExecdCommands(this);
    this.files = new SandboxFiles(this);
    this.health = new ExecdHealth(this);
    this.metrics = new ExecdMetrics(this);
    this.pty = new ExecdPty(this);
    this.isolation = new IsolationService(this);
    Object.defineProperty(this, '_egress', { value: new EgressService(this), enumerable: false });
    this.credentialVault = this._egress;
    this.sandboxes = new SandboxesService(config);
  }

  /**
   * Extension (1.1, the Python SDK's `files_with_identity`): the files service acting as
   * Linux user `uid`:`gid` (`/v1/filesystem/{uid}/{gid}/...`): the kernel decides every
   * access as for that user, and new files belong to it.
   */
  filesWithIdentity(uid, gid) {
    return new SandboxFiles(this, { identity: { uid, gid } });
  }

  async _call(op, args) {
    return call(this._n.call(op, clean({ ...(args ?? {}), sandbox: this._h })));
  }

  static async create(opts = {}) {
    checkAdapterFactory(opts.adapterFactory);
    const image = imageArg(opts.image);
    if ((image == null) === (opts.snapshotId == null)) {
      throw new InvalidArgumentException({ message: 'exactly one of image or snapshotId must be given' });
    }
    const args = {
      image,
      snapshot_id: opts.snapshotId,
      entrypoint: opts.entrypoint,
      env: opts.env ?? undefined,
      metadata: opts.metadata ?? undefined,
      network_policy: networkPolicyArg(opts.networkPolicy),
      extensions: stringMap(opts.extensions),
      image_auth: imageAuthArg(opts.image),
      platform: opts.platform == null ? undefined : { os: opts.platform.os, arch: opts.platform.arch },
      credential_proxy: opts.credentialProxy == null ? undefined : { enabled: opts.credentialProxy.enabled ?? undefined },
      volumes: opts.volumes == null ? undefined : opts.volumes.map(volumeArg),
      secure_access: opts.secureAccess ?? undefined,
      resource: opts.resource ?? undefined,
      resource_requests: opts.resourceRequests ?? undefined,
      lifecycle: lifecycleArg(opts.lifecycle),
      // null = no expiry (manual cleanup); absent = the default.
      timeout_s: opts.timeoutSeconds,
      ...connectArgs(opts),
    };
    return Sandbox._create(toConfig(opts.connectionConfig), args, opts);
  }

  /**
   * Extension (1.1, the Python SDK's `create_from_template`): a sandbox from a
   * `Succeeded` template, which fixes its image, entrypoint, env and limits; only
   * metadata, network policy and extensions go with it, and `timeoutSeconds` is required.
   */
  static async createFromTemplate(templateId, opts = {}) {
    checkAdapterFactory(opts.adapterFactory);
    if (typeof templateId !== 'string' || !templateId.trim()) {
      throw new InvalidArgumentException({ message: 'templateId cannot be blank' });
    }
    if (typeof opts.timeoutSeconds !== 'number') {
      throw new InvalidArgumentException({ message: 'timeoutSeconds is required when creating from a template' });
    }
    const args = {
      template_id: templateId,
      timeout_s: opts.timeoutSeconds,
      metadata: opts.metadata ?? undefined,
      network_policy: networkPolicyArg(opts.networkPolicy),
      extensions: stringMap(opts.extensions),
      ...connectArgs(opts),
    };
    return Sandbox._create(toConfig(opts.connectionConfig), args, opts);
  }

  /** @internal `sandbox.create`, then the caller's own health check (official rules). */
  static async _create(config, args, opts) {
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
    checkAdapterFactory(opts.adapterFactory);
    const config = toConfig(opts.connectionConfig);
    const args = { sandbox_id: opts.sandboxId, ...connectArgs(opts, 'connect_timeout_s') };
    const sbx = new Sandbox(config, await call(config._native().call('sandbox.connect', clean(args))));
    await sbx._customReady(opts);
    return sbx;
  }

  static async resume(opts) {
    checkAdapterFactory(opts.adapterFactory);
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
    return this._egress.getPolicy();
  }
  async patchEgressRules(rules) {
    await this._egress.patchRules(rules);
  }
  async deleteEgressRules(targets) {
    await this._egress.deleteRules(targets);
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
    const args = this._args(code, opts.context, opts.language);
    if (!opts.signal && !wantsEvents(opts.handlers)) return runOnce(this._s, 'code.run', args, opts.handlers, false);
    return consume(this._open(args), opts.handlers, opts.signal, false);
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
    checkAdapterFactory(opts.adapterFactory);
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
  SandboxOrigin,
  SandboxManager,
  ExecdCommands,
  SandboxFiles,
  ExecdHealth,
  ExecdMetrics,
  ExecdPty,
  PtyConnection,
  ExecutionEventDispatcher,
  DefaultAdapterFactory,
  createDefaultAdapterFactory,
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
  PoolEmptyException: errors.PoolEmptyException,
  PoolAcquireFailedException: errors.PoolAcquireFailedException,
  PoolNotRunningException: errors.PoolNotRunningException,
  PoolStateStoreUnavailableException: errors.PoolStateStoreUnavailableException,
  PoolDestroyedException: errors.PoolDestroyedException,
  PoolDestroyIncompleteException: errors.PoolDestroyIncompleteException,
  SandboxPool: pool.SandboxPool,
  SandboxPoolManager: pool.SandboxPoolManager,
  InMemoryPoolStateStore: pool.InMemoryPoolStateStore,
  AcquirePolicy: pool.AcquirePolicy,
  PoolLifecycleState: pool.PoolLifecycleState,
  PoolState: pool.PoolState,
  PoolHealthState: pool.PoolHealthState,
  PoolDestroyState: pool.PoolDestroyState,
  PoolDestroyStrategy: pool.PoolDestroyStrategy,
  PooledSandboxCreateReason: pool.PooledSandboxCreateReason,
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
