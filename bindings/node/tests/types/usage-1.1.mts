// Type-checked by `make test-node` (tsc --strict): the 1.1 services and the ./internal
// entry as the official package types them, plus this package's 1.1 extensions.
import {
  ConnectionConfig,
  DefaultAdapterFactory,
  Sandbox,
  SandboxManager,
  createDefaultAdapterFactory,
  type AdapterFactory,
  type CredentialVaultState,
  type IsolatedCapabilities,
  type IsolationSession,
  type SandboxState,
  type Sandboxes,
  type TemplateInfo,
} from '../../index.js';
import { CommandsAdapter, SandboxesAdapter } from '../../internal.js';

export async function official11(): Promise<void> {
  const factory: AdapterFactory = createDefaultAdapterFactory();
  void (factory instanceof DefaultAdapterFactory);
  const sandbox = await Sandbox.create({
    image: 'python:3.11',
    adapterFactory: factory,
    resourceRequests: { cpu: '500m' },
    credentialProxy: { enabled: true },
    networkPolicy: { defaultAction: 'deny', egress: [{ action: 'allow', target: '*.example.com' }] },
    lifecycle: { preStart: { command: ['true'] }, periodic: [{ name: 't', schedule: '@every 1s', command: ['true'] }] },
  });
  const state: SandboxState = (await sandbox.getInfo()).status.state;
  void (state === 'Deleted' || state === 'Terminated');
  const caps: IsolatedCapabilities = await sandbox.isolation.capabilities();
  void caps.commit_supported;
  const session: IsolationSession = await sandbox.isolation.create({ workspace: { path: '/workspace', mode: 'overlay' }, share_net: false });
  const run = await session.run('echo hi', { timeout_seconds: 5 });
  void run.exitCode;
  await session.files.readFile('/workspace/a');
  const bg = await session.runBackground('sleep 1');
  void (await session.runStatus(bg.run_id)).running;
  await sandbox.isolation.withSession({ workspace: { path: '/workspace' } }, async (s) => s.get());
  const vault: CredentialVaultState = await sandbox.credentialVault.create({
    credentials: [{ name: 'gh', source: { type: 'inline', value: 'x' } }],
    bindings: [{ name: 'api', match: { hosts: ['api.example.com'] }, auth: { type: 'bearer', credential: 'gh' } }],
  });
  await sandbox.credentialVault.patch({ expectedRevision: vault.revision, bindings: { delete: ['api'] } });
  const raw: Sandboxes = sandbox.sandboxes;
  await raw.renewSandboxExpiration(sandbox.id, { expiresAt: new Date().toISOString() });
  await sandbox.filesWithIdentity(1000, 1000).writeFiles([{ path: '/tmp/u', data: 'u' }]);
  const m = SandboxManager.create({ connectionConfig: new ConnectionConfig() });
  const tpl: TemplateInfo = await m.createTemplate({ image: 'python:3.11', publish: 's3://x', readiness: { warmupSeconds: 1 } });
  const fromTpl = await Sandbox.createFromTemplate(tpl.templateId, { timeoutSeconds: 600 });
  void (await m.listTemplates({ metadata: { a: '1' } })).items[0]?.status.phase;
  void new SandboxesAdapter(new ConnectionConfig());
  void CommandsAdapter;
  const f: typeof fetch = sandbox.connectionConfig.fetch;
  void f;
  await fromTpl.kill();
}
