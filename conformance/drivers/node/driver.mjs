// Conformance driver for the Node package (conformance/PROTOCOL.md): JSON lines on
// stdin/stdout, every op through the package's public API (the same import a user
// writes), never through the native addon directly.
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import {
  AcquirePolicy,
  CodeInterpreter,
  ConnectionConfig,
  InvalidArgumentException,
  Sandbox,
  SandboxApiException,
  SandboxManager,
  SandboxPool,
  SandboxReadyTimeoutException,
  VERSION,
} from '../../../bindings/node/index.js';
import { RedisPoolStateStore } from '../../../bindings/node/pool-redis.js';

const OPS = [
  'sandbox.create', 'sandbox.connect', 'sandbox.resume', 'sandbox.get_info', 'sandbox.is_healthy',
  'sandbox.renew', 'sandbox.patch_metadata', 'sandbox.pause', 'sandbox.kill', 'sandbox.get_endpoint',
  'sandbox.get_metrics', 'sandbox.create_snapshot', 'sandbox.get_egress_policy',
  'sandbox.patch_egress_rules', 'sandbox.delete_egress_rules', 'sandbox.get_diagnostic_logs',
  'sandbox.get_diagnostic_events', 'manager.list_sandbox_infos', 'manager.get_sandbox_info',
  'manager.kill_sandbox', 'manager.pause_sandbox', 'manager.resume_sandbox', 'manager.renew_sandbox',
  'manager.patch_sandbox_metadata', 'manager.get_endpoint', 'manager.get_snapshot',
  'manager.delete_snapshot', 'manager.list_snapshots', 'commands.run', 'commands.start',
  'execution.wait', 'execution.cancel', 'commands.interrupt', 'commands.get_command_status',
  'commands.get_background_command_logs', 'commands.create_session', 'commands.run_in_session',
  'commands.delete_session', 'code.create_context', 'code.get_context', 'code.list_contexts',
  'code.delete_context', 'code.delete_contexts', 'code.run', 'code.start', 'code.interrupt',
  'files.write_file', 'files.write_files', 'files.read_file', 'files.read_bytes',
  'files.read_bytes_stream', 'files.get_file_info', 'files.delete_files', 'files.delete_directories',
  'files.move_files', 'files.set_permissions', 'files.create_directories', 'files.replace_contents',
  'files.replace_contents_detailed', 'files.search', 'files.list_directory', 'metrics.watch',
  'pty.create', 'pty.get', 'pty.delete', 'pty.attach', 'pty.write', 'pty.resize', 'pty.read', 'pty.close',
  'commands.follow_background_command_logs',
  'manager.create_template', 'manager.get_template', 'manager.list_templates', 'manager.delete_template',
  'credential_vault.create', 'credential_vault.get', 'credential_vault.patch', 'credential_vault.delete',
  'credential_vault.list_credentials', 'credential_vault.get_credential', 'credential_vault.list_bindings',
  'credential_vault.get_binding',
  'isolation.capabilities', 'isolation.create', 'isolation.attach', 'isolation.get', 'isolation.list',
  'isolation.delete', 'isolation.run', 'isolation.run_background', 'isolation.run_status', 'isolation.run_logs',
  'pool.start', 'pool.snapshot', 'pool.idle_entries', 'pool.acquire', 'pool.resize', 'pool.release_all_idle',
  'pool.shutdown',
];

class DriverError extends Error {}
class Unsupported extends Error {}

const out = (v) => process.stdout.write(`${JSON.stringify(v)}\n`);
const iso = (d) => (d == null ? null : d instanceof Date ? d.toISOString() : String(d));
const nn = (v) => (v === undefined ? null : v);

// ---------------------------------------------------------------------------------
// state

const base = new ConnectionConfig();
let baseManager = null;
const sandboxes = new Map();
const contexts = new Map();
const runs = new Map();
const ptys = new Map();
const pools = new Map(); // pool name -> { pool, client }
let nextHandle = 0;

function configOf(args) {
  const c = args.connection;
  if (!c) return null;
  const opts = {};
  if (c.domain != null) opts.domain = c.domain;
  if ('api_key' in c) opts.apiKey = c.api_key ?? '';
  if (c.headers) opts.headers = c.headers;
  if (c.request_timeout_s != null) opts.requestTimeoutSeconds = c.request_timeout_s;
  if ('use_server_proxy' in c) opts.useServerProxy = !!c.use_server_proxy;
  return new ConnectionConfig(opts);
}

function manager(args) {
  const cfg = configOf(args);
  if (cfg) return SandboxManager.create({ connectionConfig: cfg });
  if (!baseManager) baseManager = SandboxManager.create({ connectionConfig: base });
  return baseManager;
}

async function sandbox(args) {
  const id = req(args, 'sandbox');
  const cfg = configOf(args);
  if (cfg) return Sandbox.connect({ sandboxId: id, connectionConfig: cfg, skipHealthCheck: true });
  let s = sandboxes.get(id);
  if (!s) {
    s = await Sandbox.connect({ sandboxId: id, connectionConfig: base, skipHealthCheck: true });
    sandboxes.set(id, s);
  }
  return s;
}

function req(args, name) {
  const v = args[name];
  if (v === undefined || v === null) throw new DriverError(`argument ${name} is required`);
  return v;
}

// ---------------------------------------------------------------------------------
// shapes

function sandboxInfo(i) {
  return {
    id: i.id,
    status: {
      state: i.status.state,
      reason: nn(i.status.reason),
      message: nn(i.status.message),
      last_transition_at: iso(i.status.lastTransitionAt),
    },
    entrypoint: i.entrypoint,
    expires_at: iso(i.expiresAt),
    created_at: iso(i.createdAt),
    image: i.image ? { uri: i.image.uri } : null,
    snapshot_id: nn(i.snapshotId),
    metadata: i.metadata ?? {},
  };
}

const pagination = (p) =>
  p && {
    page: p.page,
    page_size: p.pageSize,
    total_items: p.totalItems,
    total_pages: p.totalPages,
    has_next_page: p.hasNextPage,
  };

const snapshot = (s) => ({
  id: s.id,
  sandbox_id: s.sandboxId,
  name: nn(s.name),
  status: { state: s.status.state, reason: nn(s.status.reason), message: nn(s.status.message) },
  created_at: iso(s.createdAt),
});

const metrics = (m) => ({
  cpu_count: m.cpuCount,
  cpu_used_percentage: m.cpuUsedPercentage,
  memory_total_in_mib: m.memoryTotalMiB,
  memory_used_in_mib: m.memoryUsedMiB,
  timestamp: m.timestamp,
});

const entry = (e) => ({
  path: e.path,
  type: nn(e.type),
  mode: nn(e.mode),
  owner: nn(e.owner),
  group: nn(e.group),
  size: nn(e.size),
  modified_at: iso(e.modifiedAt),
  created_at: iso(e.createdAt),
});

const context = (c) => ({ id: nn(c.id), language: c.language });

const templateInfo = (t) => ({
  template_id: t.templateId,
  image: t.image,
  publish: t.publish,
  format: t.format,
  status: { phase: t.status.phase, manifest_ref: nn(t.status.manifestRef), message: nn(t.status.message) },
  created_at: iso(t.createdAt),
  updated_at: iso(t.updatedAt),
  resource_limits: nn(t.resourceLimits),
  entrypoint: nn(t.entrypoint),
  env: nn(t.env),
  metadata: nn(t.metadata),
  readiness: t.readiness ? { probe: nn(t.readiness.probe), warmup_seconds: nn(t.readiness.warmupSeconds) } : null,
});

const credentialMeta = (c) => ({ name: c.name, source_type: c.sourceType, revision: c.revision });
const bindingMeta = (b) => ({
  name: b.name,
  revision: b.revision,
  match: b.match
    ? { hosts: b.match.hosts, schemes: nn(b.match.schemes), methods: nn(b.match.methods), paths: nn(b.match.paths) }
    : null,
  auth: b.auth ? { type: b.auth.type, name: nn(b.auth.name) } : null,
});
const vaultState = (v) => ({
  revision: v.revision,
  credentials: v.credentials.map(credentialMeta),
  bindings: v.bindings.map(bindingMeta),
});

/** The official isolated-session models are already the wire's snake_case: absent = null. */
const isoModel = (o, keys) => Object.fromEntries(keys.map((k) => [k, nn(o[k])]));
const SESSION_KEYS = [
  'session_id', 'created_at', 'profile', 'workspace', 'overlays', 'extra_writable', 'binds', 'share_net', 'env_passthrough',
  'uid', 'gid', 'uid_mode', 'idle_timeout_seconds',
];
const STATE_KEYS = ['status', 'created_at', 'last_run_at', 'idle_remaining_seconds', ...SESSION_KEYS.slice(2)];

/** The files service of a `files.*` op: the sandbox's, a user's (`identity`) or a session's. */
async function filesOf(a) {
  const s = await sandbox(a);
  if (a.identity != null) return s.filesWithIdentity(a.identity.uid, a.identity.gid);
  if (a.isolated_session != null) return (await s.isolation.attach(a.isolated_session)).files;
  return s.files;
}

const diagnostic = (d) => ({
  sandbox_id: d.sandboxId,
  kind: d.kind,
  scope: d.scope,
  delivery: d.delivery,
  content_type: d.contentType,
  truncated: d.truncated,
  content: nn(d.content),
  content_url: nn(d.contentUrl),
  content_length: nn(d.contentLength),
  expires_at: nn(d.expiresAt),
  warnings: d.warnings ?? [],
});

function execution(e, rec) {
  const r = {
    id: nn(e.id),
    exit_code: nn(e.exitCode),
    stdout: e.logs.stdout.map((m) => m.text),
    stderr: e.logs.stderr.map((m) => m.text),
    results: e.result.map((x) => ({ text: nn(x.text) })),
    error: e.error ? { name: e.error.name, value: e.error.value, traceback: e.error.traceback } : null,
    complete: e.complete ? { execution_time_ms: e.complete.executionTimeMs } : null,
    execution_count: nn(e.executionCount),
  };
  if (rec.events) r.events = rec.events;
  if (rec.digest) {
    r.stdout_digest = { sha256: rec.digest.hash.digest('hex'), bytes: rec.digest.bytes, lines: rec.digest.lines };
  }
  return r;
}

/** Handlers recording callbacks (`handlers`), hashing stdout (`digest`), signalling init. */
function recorder(args, onInit) {
  const rec = { events: args.handlers ? [] : null, digest: null };
  const push = (ev) => rec.events && rec.events.push(ev);
  const h = {
    onInit: (i) => {
      if (onInit) onInit(i.id);
      push({ type: 'init', id: i.id });
    },
    onStdout: (m) => push({ type: 'stdout', text: m.text }),
    onStderr: (m) => push({ type: 'stderr', text: m.text }),
    onResult: (r) => push({ type: 'result', text: nn(r.text) }),
    onError: (e) => push({ type: 'error', name: e.name, value: e.value }),
    onExecutionComplete: () => push({ type: 'execution_complete' }),
  };
  if (args.skip_accumulation) h.skipAccumulation = true;
  if (args.digest) {
    const d = { hash: createHash('sha256'), bytes: 0, lines: 0 };
    rec.digest = d;
    h.skipAccumulation = true;
    const nl = Buffer.from('\n');
    // The output's bytes whatever the framing: a line-framed text gets its newline
    // back, a kept one already ends with it.
    h.onStdout = (m) => {
      const b = Buffer.from(m.text, 'utf8');
      d.hash.update(b);
      d.bytes += b.length;
      for (const byte of b) if (byte === 10) d.lines += 1;
      if (!m.text.endsWith('\n')) {
        d.hash.update(nl);
        d.bytes += 1;
        d.lines += 1;
      }
    };
  }
  return { rec, handlers: h };
}

function cmdOpts(args) {
  return {
    background: !!args.background,
    workingDirectory: args.working_directory ?? undefined,
    timeoutSeconds: args.timeout_ms != null ? args.timeout_ms / 1000 : undefined,
    uid: args.uid ?? undefined,
    gid: args.gid ?? undefined,
    envs: args.envs ?? undefined,
  };
}

/**
 * Starts `run(handlers, signal)` and answers once init arrived; the run continues.
 * `execution.cancel` aborts `signal` (the package's own cancellation).
 */
async function start(runFn, args) {
  let resolveInit;
  const init = new Promise((r) => (resolveInit = r));
  const { rec, handlers } = recorder(args, (id) => resolveInit(id));
  const ac = new AbortController();
  const p = runFn(handlers, ac.signal).then((e) => execution(e, rec));
  p.catch(() => {});
  const id = await Promise.race([
    init,
    p.then(() => {
      throw new DriverError('the run ended without an init event');
    }),
    new Promise((_, rej) => setTimeout(() => rej(new DriverError('no init event within 30s')), 30_000).unref()),
  ]);
  const handle = `run-${++nextHandle}`;
  runs.set(handle, { p, ac });
  return { handle, id };
}

async function codeContext(s, args) {
  if (args.context_id != null) {
    const key = `${s.id}/${args.context_id}`;
    let c = contexts.get(key);
    if (!c) {
      const ci = await CodeInterpreter.create(s);
      c = await ci.codes.getContext(args.context_id);
      contexts.set(key, c);
    }
    return { context: c };
  }
  return { language: args.language ?? 'python' };
}

function writeData(e) {
  if (e.data_gen) {
    const unit = Buffer.from(e.data_gen.text, 'utf8');
    const perChunk = Math.max(1, Math.floor((256 * 1024) / Math.max(1, unit.length)));
    const block = Buffer.concat(Array(perChunk).fill(unit));
    let left = e.data_gen.times;
    return (async function* gen() {
      while (left > 0 && unit.length > 0) {
        const n = Math.min(left, perChunk);
        left -= n;
        yield n === perChunk ? block : block.subarray(0, n * unit.length);
      }
    })();
  }
  if (e.data_b64 != null) return new Uint8Array(Buffer.from(e.data_b64, 'base64'));
  return e.data ?? '';
}

const writeEntry = (e) => ({
  path: req(e, 'path'),
  data: writeData(e),
  mode: e.mode ?? undefined,
  owner: e.owner ?? undefined,
  group: e.group ?? undefined,
});

const readOpts = (a) => ({ range: a.range ?? undefined, offset: a.offset ?? undefined, limit: a.limit ?? undefined });

// ---------------------------------------------------------------------------------
// dispatch

async function dispatch(op, a) {
  switch (op) {
    case 'sandbox.create': {
      const cfg = configOf(a) ?? base;
      const opts = { connectionConfig: cfg };
      if (a.template_id != null) {
        const t = { connectionConfig: cfg, timeoutSeconds: a.timeout_s ?? 600, skipHealthCheck: !!a.skip_health_check };
        if (a.ready_timeout_s != null) t.readyTimeoutSeconds = a.ready_timeout_s;
        if (a.metadata) t.metadata = a.metadata;
        if (a.extensions) t.extensions = a.extensions;
        if (a.network_policy) {
          t.networkPolicy = { defaultAction: a.network_policy.default_action, egress: a.network_policy.egress ?? [] };
        }
        const s = await Sandbox.createFromTemplate(a.template_id, t);
        if (!configOf(a)) sandboxes.set(s.id, s);
        return { id: s.id };
      }
      if (a.resource_requests) opts.resourceRequests = a.resource_requests;
      if (a.credential_proxy) opts.credentialProxy = { enabled: a.credential_proxy.enabled };
      if (a.lifecycle) {
        const hook = (h) => ({ command: h.command, timeoutSeconds: h.timeout_seconds ?? undefined });
        opts.lifecycle = {
          preStart: a.lifecycle.pre_start ? hook(a.lifecycle.pre_start) : undefined,
          periodic: (a.lifecycle.periodic ?? []).map((h) => ({ name: h.name, schedule: h.schedule, ...hook(h) })),
        };
      }
      if (a.image != null) opts.image = a.image;
      if (a.snapshot_id != null) opts.snapshotId = a.snapshot_id;
      if (a.entrypoint != null) opts.entrypoint = a.entrypoint;
      if ('timeout_s' in a) opts.timeoutSeconds = a.timeout_s;
      if (a.ready_timeout_s != null) opts.readyTimeoutSeconds = a.ready_timeout_s;
      if (a.env) opts.env = a.env;
      if (a.metadata) opts.metadata = a.metadata;
      if (a.resource) opts.resource = a.resource;
      if (a.extensions) opts.extensions = a.extensions;
      if (a.network_policy) {
        opts.networkPolicy = { defaultAction: a.network_policy.default_action, egress: a.network_policy.egress ?? [] };
      }
      if (a.skip_health_check) opts.skipHealthCheck = true;
      const s = await Sandbox.create(opts);
      if (!configOf(a)) sandboxes.set(s.id, s);
      return { id: s.id };
    }
    case 'sandbox.connect':
    case 'sandbox.resume': {
      const cfg = configOf(a) ?? base;
      const t = op === 'sandbox.connect' ? a.connect_timeout_s : a.resume_timeout_s;
      const opts = { sandboxId: req(a, 'sandbox_id'), connectionConfig: cfg, skipHealthCheck: !!a.skip_health_check };
      if (t != null) opts.readyTimeoutSeconds = t;
      const s = op === 'sandbox.connect' ? await Sandbox.connect(opts) : await Sandbox.resume(opts);
      if (!configOf(a)) sandboxes.set(s.id, s);
      return { id: s.id };
    }
    case 'sandbox.get_info':
      return sandboxInfo(await (await sandbox(a)).getInfo());
    case 'sandbox.is_healthy':
      return { healthy: await (await sandbox(a)).isHealthy() };
    case 'sandbox.renew': {
      const r = await (await sandbox(a)).renew(req(a, 'seconds'));
      return { expires_at: iso(r.expiresAt) };
    }
    case 'sandbox.patch_metadata':
      return sandboxInfo(await (await sandbox(a)).patchMetadata(a.patch ?? {}));
    case 'sandbox.pause':
      await (await sandbox(a)).pause();
      return null;
    case 'sandbox.kill': {
      await (await sandbox(a)).kill();
      sandboxes.delete(a.sandbox);
      return null;
    }
    case 'sandbox.get_endpoint':
      return (await sandbox(a)).getEndpoint(req(a, 'port'));
    case 'sandbox.get_metrics':
      return metrics(await (await sandbox(a)).getMetrics());
    case 'sandbox.create_snapshot': {
      const s = await sandbox(a);
      return snapshot(await s.sandboxes.createSnapshot(s.id, { name: a.name ?? undefined }));
    }
    case 'sandbox.get_egress_policy': {
      const p = await (await sandbox(a)).getEgressPolicy();
      return { default_action: nn(p.defaultAction), egress: (p.egress ?? []).map((r) => ({ action: r.action, target: r.target })) };
    }
    case 'sandbox.patch_egress_rules':
      await (await sandbox(a)).patchEgressRules(req(a, 'rules'));
      return null;
    case 'sandbox.delete_egress_rules':
      await (await sandbox(a)).deleteEgressRules(req(a, 'targets'));
      return null;
    case 'sandbox.get_diagnostic_logs':
      return diagnostic(await (await sandbox(a)).getDiagnosticLogs(req(a, 'scope')));
    case 'sandbox.get_diagnostic_events':
      return diagnostic(await (await sandbox(a)).getDiagnosticEvents(req(a, 'scope')));

    case 'manager.list_sandbox_infos': {
      const f = {};
      if (a.states) f.states = a.states;
      if (a.metadata) f.metadata = a.metadata;
      if (a.page != null) f.page = a.page;
      if (a.page_size != null) f.pageSize = a.page_size;
      const r = await manager(a).listSandboxInfos(f);
      return { sandbox_infos: r.items.map(sandboxInfo), pagination: pagination(r.pagination) };
    }
    case 'manager.get_sandbox_info':
      return sandboxInfo(await manager(a).getSandboxInfo(req(a, 'sandbox_id')));
    case 'manager.kill_sandbox':
      await manager(a).killSandbox(req(a, 'sandbox_id'));
      sandboxes.delete(a.sandbox_id);
      return null;
    case 'manager.pause_sandbox':
      await manager(a).pauseSandbox(req(a, 'sandbox_id'));
      return null;
    case 'manager.resume_sandbox':
      await manager(a).resumeSandbox(req(a, 'sandbox_id'));
      return null;
    case 'manager.renew_sandbox': {
      const m = manager(a);
      await m.renewSandbox(req(a, 'sandbox_id'), req(a, 'seconds'));
      const info = await m.getSandboxInfo(a.sandbox_id);
      return { expires_at: iso(info.expiresAt) };
    }
    case 'manager.patch_sandbox_metadata':
      return sandboxInfo(await manager(a).patchSandboxMetadata(req(a, 'sandbox_id'), a.patch ?? {}));
    case 'manager.get_endpoint':
      return manager(a).getEndpoint(req(a, 'sandbox_id'), req(a, 'port'));
    case 'manager.get_snapshot':
      return snapshot(await manager(a).getSnapshot(req(a, 'snapshot_id')));
    case 'manager.delete_snapshot':
      await manager(a).deleteSnapshot(req(a, 'snapshot_id'));
      return null;
    case 'manager.list_snapshots': {
      const f = {};
      if (a.sandbox_id != null) f.sandboxId = a.sandbox_id;
      if (a.states) f.states = a.states;
      if (a.page != null) f.page = a.page;
      if (a.page_size != null) f.pageSize = a.page_size;
      const r = await manager(a).listSnapshots(f);
      return { snapshot_infos: r.items.map(snapshot), pagination: pagination(r.pagination) };
    }

    case 'manager.create_template': {
      const r = a.readiness;
      return templateInfo(await manager(a).createTemplate({
        image: a.image,
        publish: a.publish,
        resourceLimits: a.resource_limits ?? undefined,
        entrypoint: a.entrypoint ?? undefined,
        env: a.env ?? undefined,
        metadata: a.metadata ?? undefined,
        readiness: r ? { probe: r.probe ?? undefined, warmupSeconds: r.warmup_seconds ?? undefined } : undefined,
        format: a.format ?? undefined,
      }));
    }
    case 'manager.get_template':
      return templateInfo(await manager(a).getTemplate(req(a, 'template_id')));
    case 'manager.list_templates': {
      const r = await manager(a).listTemplates({
        metadata: a.metadata ?? undefined, page: a.page ?? undefined, pageSize: a.page_size ?? undefined,
      });
      return { template_infos: r.items.map(templateInfo), pagination: pagination(r.pagination) };
    }
    case 'manager.delete_template':
      await manager(a).deleteTemplate(req(a, 'template_id'));
      return null;

    case 'credential_vault.create':
      return vaultState(await (await sandbox(a)).credentialVault.create({ credentials: a.credentials ?? [], bindings: a.bindings ?? [] }));
    case 'credential_vault.get':
      return vaultState(await (await sandbox(a)).credentialVault.get());
    case 'credential_vault.patch':
      return vaultState(await (await sandbox(a)).credentialVault.patch({
        expectedRevision: a.expected_revision ?? undefined,
        credentials: a.credentials ?? undefined,
        bindings: a.bindings ?? undefined,
      }));
    case 'credential_vault.delete':
      await (await sandbox(a)).credentialVault.delete();
      return null;
    case 'credential_vault.list_credentials':
      return (await (await sandbox(a)).credentialVault.listCredentials()).map(credentialMeta);
    case 'credential_vault.get_credential':
      return credentialMeta(await (await sandbox(a)).credentialVault.getCredential(req(a, 'name')));
    case 'credential_vault.list_bindings':
      return (await (await sandbox(a)).credentialVault.listBindings()).map(bindingMeta);
    case 'credential_vault.get_binding':
      return bindingMeta(await (await sandbox(a)).credentialVault.getBinding(req(a, 'name')));

    case 'isolation.capabilities': {
      const c = await (await sandbox(a)).isolation.capabilities();
      return isoModel(c, ['available', 'isolator', 'version', 'message', 'setpriv_available', 'userns_available', 'commit_supported', 'diff_supported']);
    }
    case 'isolation.create': {
      const fields = Object.fromEntries(Object.entries(a).filter(([k, v]) => k !== 'sandbox' && k !== 'connection' && v !== null));
      return isoModel((await (await sandbox(a)).isolation.create(fields)).info, SESSION_KEYS);
    }
    case 'isolation.list':
      return (await (await sandbox(a)).isolation.list()).map((x) =>
        isoModel(x, ['session_id', 'status', 'created_at', 'last_run_at', 'idle_remaining_seconds']));
    case 'isolation.attach':
    case 'isolation.get':
    case 'isolation.delete':
    case 'isolation.run':
    case 'isolation.run_background':
    case 'isolation.run_status':
    case 'isolation.run_logs': {
      // A handle from the id alone, as a stateless caller holds one.
      const session = await (await sandbox(a)).isolation.attach(req(a, 'session_id'));
      const opts = { envs: a.envs ?? undefined, timeout_seconds: a.timeout_s ?? undefined };
      switch (op) {
        case 'isolation.attach':
          return isoModel(session.info, SESSION_KEYS);
        case 'isolation.get':
          return isoModel(await session.get(), STATE_KEYS);
        case 'isolation.delete':
          await session.delete();
          return null;
        case 'isolation.run': {
          const { rec, handlers } = recorder(a);
          return execution(await session.run(req(a, 'code'), opts, handlers), rec);
        }
        case 'isolation.run_background':
          return isoModel(await session.runBackground(req(a, 'code'), opts), ['session_id', 'run_id', 'started_at']);
        case 'isolation.run_status':
          return session.runStatus(req(a, 'run_id'));
        default:
          return session.runLogs(req(a, 'run_id'), a.cursor ?? 0);
      }
    }

    case 'commands.run': {
      const s = await sandbox(a);
      const { rec, handlers } = recorder(a);
      return execution(await s.commands.run(req(a, 'command'), cmdOpts(a), handlers), rec);
    }
    case 'commands.start': {
      const s = await sandbox(a);
      return start((h, signal) => s.commands.run(req(a, 'command'), cmdOpts(a), h, signal), a);
    }
    case 'execution.wait': {
      const run = runs.get(req(a, 'handle'));
      if (!run) throw new DriverError(`no run with handle ${a.handle}`);
      runs.delete(a.handle);
      return run.p;
    }
    case 'execution.cancel': {
      const run = runs.get(req(a, 'handle'));
      if (!run) throw new DriverError(`no run with handle ${a.handle}`);
      run.ac.abort();
      return null;
    }
    case 'commands.interrupt':
      await (await sandbox(a)).commands.interrupt(req(a, 'id'));
      return null;
    case 'commands.get_command_status': {
      const st = await (await sandbox(a)).commands.getCommandStatus(req(a, 'id'));
      return {
        id: st.id,
        content: nn(st.content),
        running: st.running,
        exit_code: nn(st.exitCode),
        error: nn(st.error),
        started_at: iso(st.startedAt),
        finished_at: iso(st.finishedAt),
      };
    }
    case 'commands.get_background_command_logs': {
      const l = await (await sandbox(a)).commands.getBackgroundCommandLogs(req(a, 'id'), a.cursor ?? undefined);
      return { content: l.content, cursor: nn(l.cursor) };
    }
    case 'commands.create_session': {
      const id = await (await sandbox(a)).commands.createSession(
        a.working_directory != null ? { workingDirectory: a.working_directory } : undefined,
      );
      return { session_id: id };
    }
    case 'commands.run_in_session': {
      const s = await sandbox(a);
      const { rec, handlers } = recorder(a);
      const o = {};
      if (a.working_directory != null) o.workingDirectory = a.working_directory;
      if (a.timeout_ms != null) o.timeoutSeconds = a.timeout_ms / 1000;
      return execution(await s.commands.runInSession(req(a, 'session_id'), req(a, 'command'), o, handlers), rec);
    }
    case 'commands.delete_session':
      await (await sandbox(a)).commands.deleteSession(req(a, 'session_id'));
      return null;

    case 'code.create_context': {
      const s = await sandbox(a);
      const ci = await CodeInterpreter.create(s);
      const c = await ci.codes.createContext(req(a, 'language'), a.cwd != null ? { cwd: a.cwd } : undefined);
      if (c.id) contexts.set(`${s.id}/${c.id}`, c);
      return context(c);
    }
    case 'code.get_context':
      return context(await (await CodeInterpreter.create(await sandbox(a))).codes.getContext(req(a, 'context_id')));
    case 'code.list_contexts':
      return (await (await CodeInterpreter.create(await sandbox(a))).codes.listContexts(a.language ?? undefined)).map(context);
    case 'code.delete_context':
      await (await CodeInterpreter.create(await sandbox(a))).codes.deleteContext(req(a, 'context_id'));
      return null;
    case 'code.delete_contexts':
      await (await CodeInterpreter.create(await sandbox(a))).codes.deleteContexts(req(a, 'language'));
      return null;
    case 'code.run': {
      const s = await sandbox(a);
      const ci = await CodeInterpreter.create(s);
      const target = await codeContext(s, a);
      const { rec, handlers } = recorder(a);
      return execution(await ci.codes.run(req(a, 'code'), { ...target, handlers }), rec);
    }
    case 'code.start': {
      const s = await sandbox(a);
      const ci = await CodeInterpreter.create(s);
      const target = await codeContext(s, a);
      return start((handlers, signal) => ci.codes.run(req(a, 'code'), { ...target, handlers, signal }), a);
    }
    case 'code.interrupt':
      await (await CodeInterpreter.create(await sandbox(a))).codes.interrupt(req(a, 'id'));
      return null;

    case 'files.write_file':
      await (await filesOf(a)).writeFiles([writeEntry(a)]);
      return null;
    case 'files.write_files':
      await (await filesOf(a)).writeFiles(req(a, 'entries').map(writeEntry));
      return null;
    case 'files.read_file':
      return { text: await (await filesOf(a)).readFile(req(a, 'path'), readOpts(a)) };
    case 'files.read_bytes': {
      const b = Buffer.from(await (await filesOf(a)).readBytes(req(a, 'path'), readOpts(a)));
      return { data_b64: b.toString('base64'), size: b.length, sha256: createHash('sha256').update(b).digest('hex') };
    }
    case 'files.read_bytes_stream': {
      const h = createHash('sha256');
      let size = 0;
      for await (const c of (await filesOf(a)).readBytesStream(req(a, 'path'), readOpts(a))) {
        h.update(c);
        size += c.length;
      }
      return { size, sha256: h.digest('hex') };
    }
    case 'files.get_file_info': {
      const r = await (await filesOf(a)).getFileInfo(req(a, 'paths'));
      return Object.fromEntries(Object.entries(r).map(([k, v]) => [k, entry(v)]));
    }
    case 'files.delete_files':
      await (await filesOf(a)).deleteFiles(req(a, 'paths'));
      return null;
    case 'files.delete_directories':
      await (await filesOf(a)).deleteDirectories(req(a, 'paths'));
      return null;
    case 'files.move_files':
      await (await filesOf(a)).moveFiles(req(a, 'entries'));
      return null;
    case 'files.set_permissions':
      await (await filesOf(a)).setPermissions(req(a, 'entries'));
      return null;
    case 'files.create_directories':
      await (await filesOf(a)).createDirectories(req(a, 'entries'));
      return null;
    case 'files.replace_contents':
    case 'files.replace_contents_detailed': {
      const entries = req(a, 'entries').map((e) => ({ path: e.path, oldContent: e.old_content, newContent: e.new_content }));
      const f = await filesOf(a);
      if (op === 'files.replace_contents') {
        await f.replaceContents(entries);
        return null;
      }
      return (await f.replaceContentsDetailed(entries)).map((r) => ({ path: r.path, replaced_count: r.replacedCount }));
    }
    case 'files.search':
      return (await (await filesOf(a)).search({ path: req(a, 'path'), pattern: a.pattern ?? undefined })).map(entry);
    case 'files.list_directory':
      return (await (await filesOf(a)).listDirectory({ path: req(a, 'path'), depth: a.depth ?? undefined })).map(entry);
    case 'metrics.watch': {
      const n = req(a, 'count');
      const got = [];
      if (n > 0) {
        for await (const m of (await sandbox(a)).metrics.watchMetrics()) {
          got.push(metrics(m));
          if (got.length >= n) break;
        }
      }
      return got;
    }
    case 'pty.create':
      return { session_id: await (await sandbox(a)).pty.createSession({ cwd: a.cwd ?? undefined, command: a.command ?? undefined }) };
    case 'pty.get': {
      const st = await (await sandbox(a)).pty.getSession(req(a, 'session_id'));
      return { session_id: st.sessionId, running: st.running, output_offset: st.outputOffset };
    }
    case 'pty.delete':
      await (await sandbox(a)).pty.deleteSession(req(a, 'session_id'));
      return null;
    case 'pty.attach': {
      const conn = await (await sandbox(a)).pty.attach(req(a, 'session_id'), {
        since: a.since ?? undefined, mode: a.mode ?? undefined, takeover: !!a.takeover,
      });
      const handle = `pty-${++nextHandle}`;
      ptys.set(handle, conn);
      return { handle, mode: conn.mode };
    }
    case 'pty.write':
      await pty(a).write(req(a, 'text'));
      return null;
    case 'pty.resize':
      await pty(a).resize(req(a, 'cols'), req(a, 'rows'));
      return null;
    case 'pty.read': {
      const r = await pty(a).read({ until: a.until ?? undefined, untilExit: !!a.until_exit, timeoutMs: a.wait_ms ?? undefined });
      return {
        output: r.text, channel: nn(r.channel), offset: nn(r.offset), next_offset: r.nextOffset,
        exit_code: nn(r.exitCode), closed: r.closed, close_code: nn(r.closeCode), timed_out: r.timedOut, done: r.done,
      };
    }
    case 'pty.close': {
      const conn = pty(a);
      ptys.delete(a.handle);
      return { next_offset: await conn.close() };
    }
    case 'commands.follow_background_command_logs': {
      const start = a.cursor ?? 0;
      const chunks = [];
      let first = null;
      let expected = start;
      let contiguous = true;
      let ended = true;
      let size = 0;
      for await (const c of (await sandbox(a)).pty.followLogs(req(a, 'id'), { cursor: start })) {
        if (first == null) first = c.offset;
        contiguous = contiguous && c.offset === expected;
        expected = c.offset + c.data.length;
        chunks.push(c.data);
        size += c.data.length;
        if (a.max_bytes != null && size >= a.max_bytes) {
          ended = false;
          break;
        }
      }
      return {
        content: Buffer.concat(chunks).toString('utf8'), first_offset: first, cursor: expected,
        chunks: chunks.length, contiguous, ended,
      };
    }
    default:
      if (op.startsWith('pool.')) return poolOp(op, a);
      throw new Unsupported(op);
  }
}

// ---------------------------------------------------------------------------------
// client-side pools (PROTOCOL.md §2.11)

// node-redis (`redis` from npm, the client the package's Redis store is used with): from
// .work/node/tools (make setup-node-tools), else wherever node resolves it.
function redisModule() {
  for (const place of [new URL('../../../.work/node/tools/package.json', import.meta.url), import.meta.url]) {
    try {
      return createRequire(place)('redis');
    } catch {
      // next place
    }
  }
  throw new DriverError('the npm package `redis` is missing (make setup-node-tools installs it)');
}

async function closePool(name) {
  const p = pools.get(name);
  if (!p) return;
  pools.delete(name);
  await p.pool.shutdown(false);
  if (p.client) await p.client.quit();
}

async function poolOp(op, a) {
  const name = req(a, 'pool_name');
  if (op === 'pool.start') {
    await closePool(name);
    let stateStore;
    let client = null;
    const store = a.store ?? 'memory';
    if (store === 'redis') {
      client = redisModule().createClient({ url: req(a, 'redis_url') });
      await client.connect();
      stateStore = new RedisPoolStateStore({ client, keyPrefix: a.key_prefix ?? undefined });
    } else if (store !== 'memory') {
      throw new DriverError(`unknown store ${store}`);
    }
    const pool = new SandboxPool({
      poolName: name,
      maxIdle: req(a, 'max_idle'),
      connectionConfig: base,
      creationSpec: { image: a.image ?? 'python:3.11', metadata: a.metadata ?? undefined },
      stateStore,
      idleTimeoutSeconds: a.idle_timeout_s ?? undefined,
      primaryLockTtlSeconds: a.primary_lock_ttl_s ?? undefined,
      reconcileIntervalSeconds: a.reconcile_interval_s ?? undefined,
      ownerId: a.owner_id ?? undefined,
    });
    try {
      await pool.start();
    } catch (e) {
      if (client) await client.quit();
      throw e;
    }
    pools.set(name, { pool, client });
    return { pool_name: name };
  }
  const entry = pools.get(name);
  if (!entry) throw new DriverError(`no pool ${name} was started in this driver`);
  const { pool } = entry;
  switch (op) {
    case 'pool.snapshot': {
      const s = await pool.snapshot();
      return { lifecycle_state: s.lifecycleState, state: s.state, idle_count: s.idleCount, max_idle: s.maxIdle };
    }
    case 'pool.idle_entries':
      return (await pool.snapshotIdleEntries()).map((e) => ({ sandbox_id: e.sandboxId, expires_at: iso(e.expiresAt) }));
    case 'pool.acquire': {
      const s = await pool.acquire({
        policy: a.policy == null ? undefined : AcquirePolicy[a.policy],
        sandboxTimeoutSeconds: a.sandbox_timeout_s ?? undefined,
      });
      sandboxes.set(s.id, s);
      return { id: s.id };
    }
    case 'pool.resize':
      await pool.resize(req(a, 'max_idle'));
      return null;
    case 'pool.release_all_idle':
      return { count: await pool.releaseAllIdle() };
    case 'pool.shutdown':
      await pool.shutdown(a.graceful ?? true);
      return null;
    default:
      throw new Unsupported(op);
  }
}

function pty(a) {
  const conn = ptys.get(a.handle);
  if (!conn) throw new DriverError(`unknown pty handle ${a.handle}`);
  return conn;
}

function errorJson(e) {
  if (e instanceof DriverError) return { kind: 'driver_error', message: e.message };
  if (e instanceof Unsupported) return { kind: 'unsupported_op', message: `unsupported op ${e.message}` };
  let kind = e && e.kind;
  const errorCode = e && e.error && e.error.code;
  if (!kind && typeof errorCode === 'string' && errorCode.startsWith('POOL_')) kind = errorCode.toLowerCase();
  if (!kind && e && e.name === 'AbortError') kind = 'cancelled';
  if (!kind) {
    if (e instanceof SandboxReadyTimeoutException) kind = 'ready_timeout';
    else if (e instanceof InvalidArgumentException) kind = 'invalid_argument';
    else if (e instanceof SandboxApiException) kind = 'api';
    else kind = 'driver_error';
  }
  return {
    kind,
    status: nn(e && e.statusCode),
    code: errorCode != null && (e instanceof SandboxApiException || kind.startsWith('pool_')) ? errorCode : null,
    request_id: nn(e && e.requestId),
    message: String((e && e.message) || e),
  };
}

out({ hello: 'opensandbox-conformance', protocol: 1, language: 'node', sdk: 'opensandbox-node', sdk_version: VERSION, ops: OPS });

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
  if (!line.trim()) continue;
  let id = null;
  try {
    const r = JSON.parse(line);
    id = r.id ?? null;
    const result = await dispatch(r.op, r.args ?? {});
    out({ id, ok: true, result: result === undefined ? null : result });
  } catch (e) {
    if (!(e instanceof DriverError) && !(e && e.kind)) process.stderr.write(`${(e && e.stack) || e}\n`);
    out({ id, ok: false, error: errorJson(e) });
  }
}
for (const name of [...pools.keys()]) await closePool(name);
process.exit(0);
