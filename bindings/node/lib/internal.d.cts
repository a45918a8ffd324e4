// GENERATED from ../internal.d.ts by scripts/gen-dcts.mjs: do not edit.
// The ./internal entry (official `@alibaba-group/opensandbox/internal`): advanced, not
// stable API. The adapters are this package's service classes under the official names;
// their constructors take a Sandbox or a ConnectionConfig (not an OpenAPI client) and are
// not meant to be called directly. Not here: `create{Lifecycle,Execd,Egress}Client` and
// the OpenAPI path types (no fetch-based clients: the transport is the native core), and
// the client-IP helpers.
import type {
  ConnectionConfig,
  CreateIsolatedSessionRequest,
  CreateSandboxRequest,
  CreateSandboxResponse,
  CreateSnapshotRequest,
  CommandExecution,
  CredentialBindingMetadata,
  CredentialMetadata,
  CredentialVault,
  CredentialVaultCreateRequest,
  CredentialVaultPatchRequest,
  CredentialVaultState,
  Egress,
  Endpoint,
  IsolatedCapabilities,
  IsolatedSessionSummary,
  IsolationService,
  IsolationSession,
  ListSandboxesParams,
  ListSandboxesResponse,
  ListSnapshotsParams,
  ListSnapshotsResponse,
  NetworkPolicy,
  NetworkRule,
  RenewSandboxExpirationRequest,
  RenewSandboxExpirationResponse,
  RunOnceOpts,
  Sandbox,
  Sandboxes,
  SandboxId,
  SandboxInfo,
  SandboxMetadataPatch,
  SnapshotInfo,
} from './index.cjs';

export {
  ExecdCommands as CommandsAdapter,
  ExecdHealth as HealthAdapter,
  ExecdMetrics as MetricsAdapter,
  SandboxFiles as FilesystemAdapter,
} from './index.cjs';

export declare class SandboxesAdapter implements Sandboxes {
  constructor(config: ConnectionConfig);
  createSandbox(req: CreateSandboxRequest): Promise<CreateSandboxResponse>;
  getSandbox(sandboxId: SandboxId): Promise<SandboxInfo>;
  listSandboxes(params?: ListSandboxesParams): Promise<ListSandboxesResponse>;
  patchSandboxMetadata(sandboxId: SandboxId, patch: SandboxMetadataPatch): Promise<SandboxInfo>;
  deleteSandbox(sandboxId: SandboxId): Promise<void>;
  pauseSandbox(sandboxId: SandboxId): Promise<void>;
  resumeSandbox(sandboxId: SandboxId): Promise<void>;
  renewSandboxExpiration(sandboxId: SandboxId, req: RenewSandboxExpirationRequest): Promise<RenewSandboxExpirationResponse>;
  createSnapshot(sandboxId: SandboxId, req?: CreateSnapshotRequest): Promise<SnapshotInfo>;
  getSnapshot(snapshotId: string): Promise<SnapshotInfo>;
  listSnapshots(params?: ListSnapshotsParams): Promise<ListSnapshotsResponse>;
  deleteSnapshot(snapshotId: string): Promise<void>;
  getSandboxEndpoint(sandboxId: SandboxId, port: number, useServerProxy?: boolean): Promise<Endpoint>;
  getSignedEndpoint(sandboxId: SandboxId, port: number, expires: number): Promise<Endpoint>;
}

export declare class EgressAdapter implements Egress, CredentialVault {
  constructor(sandbox: Sandbox);
  getPolicy(): Promise<NetworkPolicy>;
  patchRules(rules: NetworkRule[]): Promise<void>;
  deleteRules(targets: string[]): Promise<void>;
  create(request: CredentialVaultCreateRequest): Promise<CredentialVaultState>;
  get(): Promise<CredentialVaultState>;
  patch(request: CredentialVaultPatchRequest): Promise<CredentialVaultState>;
  delete(): Promise<void>;
  listCredentials(): Promise<CredentialMetadata[]>;
  getCredential(name: string): Promise<CredentialMetadata>;
  listBindings(): Promise<CredentialBindingMetadata[]>;
  getBinding(name: string): Promise<CredentialBindingMetadata>;
}

export declare class IsolatedSessionsAdapter implements IsolationService {
  constructor(sandbox: Sandbox);
  create(request: CreateIsolatedSessionRequest): Promise<IsolationSession>;
  attach(sessionId: string): Promise<IsolationSession>;
  capabilities(): Promise<IsolatedCapabilities>;
  list(): Promise<IsolatedSessionSummary[]>;
  runOnce(code: string, workspace: string, opts?: RunOnceOpts): Promise<CommandExecution>;
  withSession<T>(request: CreateIsolatedSessionRequest, fn: (session: IsolationSession) => Promise<T>): Promise<T>;
}
