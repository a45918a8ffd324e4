// GENERATED from ../index.d.ts by scripts/gen-dcts.mjs: do not edit.
// Type declarations of opensandbox-node: the public surface of
// @alibaba-group/opensandbox 0.1.11 that this package implements, plus the documented
// extensions (marked "Extension"). Hand-written; tests/exports.test.mjs fails when a
// runtime export is missing here or a declared value is missing at runtime.

export type SandboxId = string;
export type ConnectionProtocol = 'http' | 'https';

// ---- errors -----------------------------------------------------------------------

export type SandboxErrorCode =
  | 'INTERNAL_UNKNOWN_ERROR'
  | 'READY_TIMEOUT'
  | 'UNHEALTHY'
  | 'INVALID_ARGUMENT'
  | 'UNEXPECTED_RESPONSE'
  | 'POOL_EMPTY'
  | 'POOL_ACQUIRE_FAILED'
  | 'POOL_NOT_RUNNING'
  | 'POOL_STATE_STORE_UNAVAILABLE'
  | 'POOL_DESTROYED'
  | 'POOL_DESTROY_INCOMPLETE'
  | (string & {});

export declare class SandboxError {
  readonly code: SandboxErrorCode;
  readonly message?: string;
  static readonly INTERNAL_UNKNOWN_ERROR: SandboxErrorCode;
  static readonly READY_TIMEOUT: SandboxErrorCode;
  static readonly UNHEALTHY: SandboxErrorCode;
  static readonly INVALID_ARGUMENT: SandboxErrorCode;
  static readonly UNEXPECTED_RESPONSE: SandboxErrorCode;
  static readonly POOL_EMPTY: SandboxErrorCode;
  static readonly POOL_ACQUIRE_FAILED: SandboxErrorCode;
  static readonly POOL_NOT_RUNNING: SandboxErrorCode;
  static readonly POOL_STATE_STORE_UNAVAILABLE: SandboxErrorCode;
  static readonly POOL_DESTROYED: SandboxErrorCode;
  static readonly POOL_DESTROY_INCOMPLETE: SandboxErrorCode;
  constructor(code: SandboxErrorCode, message?: string);
}

export interface SandboxExceptionOpts {
  message?: string;
  cause?: unknown;
  error?: SandboxError;
  requestId?: string;
}

/** Error kinds of the Rust core (Extension: `kind` on every exception this package throws). */
export type ErrorKind =
  | 'api'
  | 'not_found'
  | 'unauthorized'
  | 'timeout'
  | 'ready_timeout'
  | 'connection'
  | 'stream'
  | 'invalid_argument'
  | 'cancelled'
  | 'internal';

export declare class SandboxException extends Error {
  readonly name: string;
  readonly error: SandboxError;
  readonly cause?: unknown;
  readonly requestId?: string;
  /** Extension: the core's error kind. */
  readonly kind?: ErrorKind;
  /** Extension: the SDK operation that failed. */
  readonly operation?: string;
  constructor(opts?: SandboxExceptionOpts);
}
export declare class SandboxApiException extends SandboxException {
  readonly statusCode?: number;
  readonly rawBody?: unknown;
  constructor(opts: SandboxExceptionOpts & { statusCode?: number; rawBody?: unknown });
}
export declare class SandboxInternalException extends SandboxException {
  constructor(opts: { message?: string; cause?: unknown });
}
export declare class SandboxUnhealthyException extends SandboxException {
  constructor(opts: { message?: string; cause?: unknown });
}
export declare class SandboxReadyTimeoutException extends SandboxException {
  constructor(opts: { message?: string; cause?: unknown });
}
export declare class InvalidArgumentException extends SandboxException {
  constructor(opts: { message?: string; cause?: unknown });
}
/** `acquire` found no idle sandbox and its policy creates none (FAIL_FAST, RETRY_NEXT_IDLE). */
export declare class PoolEmptyException extends SandboxException {
  constructor(poolName: string);
}
/** `acquire` tried idle candidates, none was usable, and its policy creates none. */
export declare class PoolAcquireFailedException extends SandboxException {
  constructor(poolName: string, cause?: unknown);
}
/** The pool is not RUNNING (not started, draining or stopped). */
export declare class PoolNotRunningException extends SandboxException {
  constructor(poolName: string, state: string);
}
/** The pool state store (e.g. Redis) failed or is unreachable. */
export declare class PoolStateStoreUnavailableException extends SandboxException {
  constructor(operation: string, cause?: unknown);
}
/** The pool namespace is being destroyed or was destroyed (`SandboxPoolManager.destroy`). */
export declare class PoolDestroyedException extends SandboxException {
  constructor(poolName: string, state: string);
}
/** A destroy started but did not finish (drain timeout, store failure): run it again. */
export declare class PoolDestroyIncompleteException extends SandboxException {
  constructor(poolName: string, cause?: unknown);
}

// ---- connection ---------------------------------------------------------------------

export interface ConnectionConfigOptions {
  domain?: string;
  protocol?: ConnectionProtocol;
  apiKey?: string;
  headers?: Record<string, string>;
  requestTimeoutSeconds?: number;
  /** Request logging: not supported (the native core makes the requests); `true` throws `InvalidArgumentException`. */
  debug?: boolean;
  useServerProxy?: boolean;
  /** How long a resolved endpoint is reused (the core's endpoint cache); default 600000. */
  endpointCacheTtlMs?: number;
  /** Maximum number of cached endpoints; default 1024; 0 turns the cache off. */
  endpointCacheSize?: number;
  endpointCacheDisabled?: boolean;
  /** This package sends no telemetry: always as if set. */
  disableMetrics?: boolean;
  /** OpenTelemetry spans of pool warmup: not supported; `true` throws `InvalidArgumentException`. */
  enableTracing?: boolean;
}

export declare class ConnectionConfig {
  readonly protocol: ConnectionProtocol;
  readonly domain: string;
  readonly apiKey?: string;
  readonly headers: Record<string, string>;
  readonly requestTimeoutSeconds: number;
  readonly debug: boolean;
  readonly userAgent: string;
  readonly useServerProxy: boolean;
  readonly endpointCacheTtlMs: number;
  readonly endpointCacheSize: number;
  readonly endpointCacheDisabled: boolean;
  readonly disableMetrics: boolean;
  readonly enableTracing: boolean;
  constructor(opts?: ConnectionConfigOptions);
  /** Node's fetch bounded by `requestTimeoutSeconds` (the SDK's own calls go through the native core). */
  get fetch(): typeof fetch;
  /** Node's fetch without a timeout (the SDK's own calls go through the native core). */
  get sseFetch(): typeof fetch;
  getBaseUrl(): string;
  withTransportIfMissing(): ConnectionConfig;
  closeTransport(): Promise<void>;
}

// ---- models -------------------------------------------------------------------------

export interface ImageAuth extends Record<string, unknown> {
  username?: string;
  password?: string;
  /** Not supported (the core has no token field): passing one throws InvalidArgumentException. */
  token?: string;
}
export interface ImageSpec {
  uri: string;
  auth?: ImageAuth;
}
export interface PlatformSpec extends Record<string, unknown> {
  os: 'linux' | 'windows';
  arch: 'amd64' | 'arm64';
}
export type NetworkRuleAction = 'allow' | 'deny';
export interface NetworkRule extends Record<string, unknown> {
  action: NetworkRuleAction;
  target: string;
}
export interface NetworkPolicy extends Record<string, unknown> {
  defaultAction?: NetworkRuleAction;
  egress?: NetworkRule[];
}
export interface CredentialProxyConfig extends Record<string, unknown> {
  enabled?: boolean;
}
export type ResourceLimits = Record<string, string>;

// ---- credential vault (1.1) ------------------------------------------------------------

export interface InlineCredentialSource extends Record<string, unknown> {
  type?: 'inline';
  value: string;
}
export interface Credential extends Record<string, unknown> {
  name: string;
  source: InlineCredentialSource;
}
export type CredentialMatchScheme = 'https' | 'http';
export interface CredentialMatch extends Record<string, unknown> {
  schemes?: CredentialMatchScheme[];
  ports?: number[];
  hosts: string[];
  methods?: string[];
  paths?: string[];
}
export type CredentialSubstitutionSurface = 'path' | 'query' | 'header' | 'body';
export interface CredentialSubstitution extends Record<string, unknown> {
  credential: string;
  placeholder: string;
  in: CredentialSubstitutionSurface[];
}
export interface CustomHeaderEntry extends Record<string, unknown> {
  name: string;
  credential: string;
}
interface CredentialAuthSubstitutions {
  substitutions?: CredentialSubstitution[];
}
export type CredentialAuth =
  | ({ type: 'bearer'; credential: string } & CredentialAuthSubstitutions)
  | ({ type: 'basic'; credential: string } & CredentialAuthSubstitutions)
  | ({ type: 'apiKey'; name: string; credential: string } & CredentialAuthSubstitutions)
  | ({ type: 'customHeaders'; headers: CustomHeaderEntry[] } & CredentialAuthSubstitutions)
  | ({ type: 'passthrough' } & CredentialAuthSubstitutions);
export interface CredentialBinding extends Record<string, unknown> {
  name: string;
  match: CredentialMatch;
  auth: CredentialAuth;
}
export interface CredentialMetadata {
  name: string;
  sourceType: string;
  revision: number;
}
export interface CredentialAuthMetadata {
  type: string;
  name?: string;
}
export interface CredentialBindingMetadata {
  name: string;
  revision: number;
  match?: CredentialMatch;
  auth?: CredentialAuthMetadata;
}
export interface CredentialVaultState {
  revision: number;
  credentials: CredentialMetadata[];
  bindings: CredentialBindingMetadata[];
}
export interface CredentialListResponse {
  revision: number;
  credentials: CredentialMetadata[];
}
export interface CredentialBindingListResponse {
  revision: number;
  bindings: CredentialBindingMetadata[];
}
export interface CredentialMutationSet extends Record<string, unknown> {
  add?: Credential[];
  replace?: Credential[];
  delete?: string[];
}
export interface CredentialBindingMutationSet extends Record<string, unknown> {
  add?: CredentialBinding[];
  replace?: CredentialBinding[];
  delete?: string[];
}
export interface CredentialVaultCreateRequest extends Record<string, unknown> {
  credentials: Credential[];
  bindings: CredentialBinding[];
}
export interface CredentialVaultPatchRequest extends Record<string, unknown> {
  expectedRevision?: number;
  credentials?: CredentialMutationSet;
  bindings?: CredentialBindingMutationSet;
}
export interface CredentialVault {
  create(request: CredentialVaultCreateRequest): Promise<CredentialVaultState>;
  get(): Promise<CredentialVaultState>;
  patch(request: CredentialVaultPatchRequest): Promise<CredentialVaultState>;
  delete(): Promise<void>;
  listCredentials(): Promise<CredentialMetadata[]>;
  getCredential(name: string): Promise<CredentialMetadata>;
  listBindings(): Promise<CredentialBindingMetadata[]>;
  getBinding(name: string): Promise<CredentialBindingMetadata>;
}
export interface Egress {
  getPolicy(): Promise<NetworkPolicy>;
  patchRules(rules: NetworkRule[]): Promise<void>;
  deleteRules(targets: string[]): Promise<void>;
}
export interface Host extends Record<string, unknown> {
  path: string;
}
export interface PVC extends Record<string, unknown> {
  claimName: string;
  createIfNotExists?: boolean;
  deleteOnSandboxTermination?: boolean;
  storageClass?: string;
  storage?: string;
  accessModes?: string[];
}
export interface OSSFS extends Record<string, unknown> {
  bucket: string;
  endpoint: string;
  accessKeyId: string;
  accessKeySecret: string;
  version?: string;
  options?: string[];
}
export interface Volume extends Record<string, unknown> {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  subPath?: string;
  host?: Host;
  pvc?: PVC;
  ossfs?: OSSFS;
}
/** The official names, then the ones this server sends (`Pending`, `Stopping`, `Terminated`, `Failed`). */
export type SandboxState =
  | 'Creating' | 'Running' | 'Pausing' | 'Paused' | 'Resuming' | 'Deleting' | 'Deleted' | 'Error'
  | 'Pending' | 'Stopping' | 'Terminated' | 'Failed'
  | string;
export interface SandboxStatus extends Record<string, unknown> {
  state: SandboxState;
  reason?: string;
  message?: string;
  lastTransitionAt?: Date;
}
export interface SandboxInfo extends Record<string, unknown> {
  id: SandboxId;
  image?: ImageSpec;
  snapshotId?: string;
  platform?: PlatformSpec;
  entrypoint: string[];
  metadata?: Record<string, string>;
  extensions?: Record<string, string>;
  status: SandboxStatus;
  createdAt: Date;
  expiresAt: Date | null;
}
export interface PaginationInfo extends Record<string, unknown> {
  page: number;
  pageSize: number;
  totalItems: number;
  totalPages: number;
  hasNextPage: boolean;
}
export interface ListSandboxesResponse extends Record<string, unknown> {
  items: SandboxInfo[];
  pagination?: PaginationInfo;
}
export type SnapshotState = 'Creating' | 'Deleting' | 'Ready' | 'Failed' | string;
export interface SnapshotStatus extends Record<string, unknown> {
  state: SnapshotState;
  reason?: string;
  message?: string;
  lastTransitionAt?: Date;
}
export interface SnapshotInfo extends Record<string, unknown> {
  id: string;
  sandboxId: SandboxId;
  name?: string;
  status: SnapshotStatus;
  createdAt: Date;
}
export interface CreateSnapshotRequest extends Record<string, unknown> {
  name?: string;
}
export interface ListSnapshotsParams {
  sandboxId?: SandboxId;
  name?: string;
  states?: string[];
  page?: number;
  pageSize?: number;
}
export interface ListSnapshotsResponse extends Record<string, unknown> {
  items: SnapshotInfo[];
  pagination?: PaginationInfo;
}
export type SandboxMetadataPatch = Record<string, string | null>;
export interface RenewSandboxExpirationResponse extends Record<string, unknown> {
  expiresAt?: Date;
}
export interface Endpoint extends Record<string, unknown> {
  endpoint: string;
  headers?: Record<string, string>;
}
/** Extension: diagnostics content (the reference server implements the diagnostics API). */
export interface DiagnosticContent extends Record<string, unknown> {
  sandboxId: string;
  kind: string;
  scope: string;
  delivery: string;
  contentType: string;
  truncated: boolean;
  content?: string | null;
  contentUrl?: string | null;
  contentLength?: number | null;
  expiresAt?: string | null;
  warnings?: string[];
}

export type FileEntryType = 'file' | 'directory' | 'symlink' | 'other';
export interface FileInfo extends Record<string, unknown> {
  path: string;
  type?: FileEntryType;
  size?: number;
  modifiedAt?: Date;
  createdAt?: Date;
  mode?: number;
  owner?: string;
  group?: string;
}
export interface WriteEntry {
  path: string;
  /** Text, bytes, or a stream (Node Readable, async iterable, web ReadableStream, Blob). */
  data?: string | Uint8Array | ArrayBuffer | Blob | AsyncIterable<Uint8Array | string> | ReadableStream<Uint8Array>;
  mode?: number;
  owner?: string;
  group?: string;
}
export interface SearchEntry {
  path: string;
  pattern?: string;
}
export interface DirectoryListEntry {
  path: string;
  depth?: number;
}
export interface MoveEntry {
  src: string;
  dest: string;
}
export interface ContentReplaceEntry {
  path: string;
  oldContent: string;
  newContent: string;
}
export interface ContentReplaceResult {
  path: string;
  replacedCount: number;
}
export interface SetPermissionEntry {
  path: string;
  mode: number;
  owner?: string;
  group?: string;
}
export interface ReadOptions {
  encoding?: string;
  range?: string;
  offset?: number;
  limit?: number;
}

// ---- executions ----------------------------------------------------------------------

export interface OutputMessage {
  text: string;
  timestamp: number;
  isError?: boolean;
}
export interface ExecutionResult {
  text?: string;
  timestamp: number;
  raw?: Record<string, unknown>;
}
export interface ExecutionError {
  name: string;
  value: string;
  timestamp: number;
  traceback: string[];
}
export interface ExecutionComplete {
  timestamp: number;
  executionTimeMs: number;
}
export interface ExecutionInit {
  id: string;
  timestamp: number;
}
export interface Execution {
  id?: string;
  executionCount?: number;
  logs: { stdout: OutputMessage[]; stderr: OutputMessage[] };
  result: ExecutionResult[];
  error?: ExecutionError;
  complete?: ExecutionComplete;
  exitCode?: number | null;
}
export type CommandExecution = Execution;
export interface ExecutionHandlers {
  onEvent?: (ev: unknown) => void | Promise<void>;
  onStdout?: (msg: OutputMessage) => void | Promise<void>;
  onStderr?: (msg: OutputMessage) => void | Promise<void>;
  onResult?: (res: ExecutionResult) => void | Promise<void>;
  onExecutionComplete?: (c: ExecutionComplete) => void | Promise<void>;
  onError?: (err: ExecutionError) => void | Promise<void>;
  onInit?: (init: ExecutionInit) => void | Promise<void>;
  skipAccumulation?: boolean;
}
export interface ServerStreamEvent extends Record<string, unknown> {
  type: 'init' | 'stdout' | 'stderr' | 'result' | 'execution_count' | 'execution_complete' | 'error' | string;
  timestamp?: number;
  text?: string;
  results?: Record<string, unknown>;
  error?: Record<string, unknown>;
}
export interface RunCommandOpts {
  workingDirectory?: string;
  background?: boolean;
  timeoutSeconds?: number;
  uid?: number;
  gid?: number;
  envs?: Record<string, string>;
}
export interface CommandStatus {
  id?: string;
  content?: string;
  running?: boolean;
  exitCode?: number | null;
  error?: string;
  startedAt?: Date;
  finishedAt?: Date | null;
}
export interface CommandLogs {
  content: string;
  cursor?: number;
}
export interface SandboxMetrics {
  cpuCount: number;
  cpuUsedPercentage: number;
  memoryTotalMiB: number;
  memoryUsedMiB: number;
  timestamp: number;
}

export declare class ExecutionEventDispatcher {
  constructor(execution: Execution, handlers?: ExecutionHandlers);
  dispatch(ev: ServerStreamEvent): Promise<void>;
}

export declare class ExecdCommands {
  private constructor();
  runStream(command: string, opts?: RunCommandOpts, signal?: AbortSignal): AsyncIterable<ServerStreamEvent>;
  run(command: string, opts?: RunCommandOpts, handlers?: ExecutionHandlers, signal?: AbortSignal): Promise<CommandExecution>;
  interrupt(sessionId: string): Promise<void>;
  getCommandStatus(commandId: string): Promise<CommandStatus>;
  getBackgroundCommandLogs(commandId: string, cursor?: number): Promise<CommandLogs>;
  createSession(options?: { workingDirectory?: string }): Promise<string>;
  runInSession(
    sessionId: string,
    command: string,
    options?: { workingDirectory?: string; timeoutSeconds?: number },
    handlers?: ExecutionHandlers,
    signal?: AbortSignal,
  ): Promise<CommandExecution>;
  /** Extension: the raw event stream of a session run. */
  runInSessionStream(
    sessionId: string,
    command: string,
    options?: { workingDirectory?: string; timeoutSeconds?: number },
    signal?: AbortSignal,
  ): AsyncIterable<ServerStreamEvent>;
  deleteSession(sessionId: string): Promise<void>;
}

export declare class SandboxFiles {
  private constructor();
  getFileInfo(paths: string[]): Promise<Record<string, FileInfo>>;
  search(entry: SearchEntry): Promise<FileInfo[]>;
  listDirectory(entry: DirectoryListEntry): Promise<FileInfo[]>;
  createDirectories(entries: Pick<WriteEntry, 'path' | 'mode' | 'owner' | 'group'>[]): Promise<void>;
  deleteDirectories(paths: string[]): Promise<void>;
  writeFiles(entries: WriteEntry[]): Promise<void>;
  /** Extension: writes one file. */
  writeFile(path: string, data: WriteEntry['data'], opts?: { mode?: number; owner?: string; group?: string }): Promise<void>;
  readFile(path: string, opts?: ReadOptions): Promise<string>;
  readBytes(path: string, opts?: Omit<ReadOptions, 'encoding'>): Promise<Uint8Array>;
  /** `signal` is an extension: aborting it closes the download. */
  readBytesStream(path: string, opts?: Omit<ReadOptions, 'encoding'> & { signal?: AbortSignal }): AsyncIterable<Uint8Array>;
  deleteFiles(paths: string[]): Promise<void>;
  moveFiles(entries: MoveEntry[]): Promise<void>;
  replaceContents(entries: ContentReplaceEntry[]): Promise<void>;
  replaceContentsDetailed(entries: ContentReplaceEntry[]): Promise<ContentReplaceResult[]>;
  setPermissions(entries: SetPermissionEntry[]): Promise<void>;
}

export declare class ExecdHealth {
  private constructor();
  ping(): Promise<boolean>;
}

export declare class ExecdMetrics {
  private constructor();
  getMetrics(): Promise<SandboxMetrics>;
  /** Extension: `GET /metrics/watch` as an async iterable. */
  watchMetrics(signal?: AbortSignal): AsyncIterable<SandboxMetrics>;
}

// ---- PTY sessions (extension: the official npm SDK has none) -----------------------------

export interface PtyCreateOptions {
  /** Working directory (`$VAR` and `~` expanded, created if missing). */
  cwd?: string;
  /** Run `bash -c command` instead of an interactive shell. */
  command?: string;
}
export interface PtySessionStatus {
  sessionId: string;
  /** Whether the shell is alive (false before the first attach). */
  running: boolean;
  /** Bytes ever produced: the offset the next byte will get. */
  outputOffset: number;
}
export interface PtyAttachOptions {
  /** Replay from this byte offset (default 0: all that is still buffered). */
  since?: number;
  /** Only if this attach starts the shell. */
  mode?: 'pty' | 'pipe';
  /** Evict a client holding the session instead of failing with 409. */
  takeover?: boolean;
}
export interface PtyOutput {
  data: Buffer;
  /** Absolute offset of the first byte. */
  offset: number;
  channel: 'stdout' | 'stderr' | 'replay';
}
export interface PtyReadOptions {
  /** Read until the output of this call contains this text. */
  until?: string;
  /** Read until the shell exits and the connection closes. */
  untilExit?: boolean;
  /** Bound the wait (`timedOut` then). */
  timeoutMs?: number;
}
export interface PtyRead {
  data: Buffer;
  readonly text: string;
  offset: number | null;
  nextOffset: number;
  channel: 'stdout' | 'stderr' | 'replay' | null;
  exitCode: number | null;
  closed: boolean;
  /** 1000 after an exit, 4001 when another client took the session over. */
  closeCode: number | null;
  timedOut: boolean;
  done: boolean;
}
export declare class PtyConnection implements AsyncIterable<PtyOutput> {
  private constructor();
  readonly sessionId: string;
  readonly mode: 'pty' | 'pipe';
  /** The offset after the last byte read: pass it as `since` to resume exactly. */
  readonly nextOffset: number;
  readonly exitCode: number | undefined;
  readonly closeCode: number | undefined;
  read(opts?: PtyReadOptions): Promise<PtyRead>;
  [Symbol.asyncIterator](): AsyncIterator<PtyOutput>;
  /** Input: bytes, or a string sent as UTF-8 (`'\r'` is Enter). */
  write(data: Uint8Array | string): Promise<void>;
  resize(cols: number, rows: number): Promise<void>;
  signal(name: 'SIGINT' | 'SIGTERM' | 'SIGKILL' | 'SIGQUIT' | 'SIGHUP'): Promise<void>;
  /** Detaches (the shell keeps running); resolves to the offset to resume from. */
  close(): Promise<number>;
}
export interface LogChunk {
  offset: number;
  data: Buffer;
}
export declare class ExecdPty {
  private constructor();
  createSession(opts?: PtyCreateOptions): Promise<string>;
  getSession(sessionId: string): Promise<PtySessionStatus>;
  deleteSession(sessionId: string): Promise<void>;
  attach(sessionId: string, opts?: PtyAttachOptions): Promise<PtyConnection>;
  /** A background command's output, live, without loss or repetition. */
  followLogs(executionId: string, opts?: { cursor?: number; intervalMs?: number }): AsyncIterable<LogChunk>;
}

// ---- raw lifecycle service, adapter factory --------------------------------------------

export interface CreateSandboxRequest extends Record<string, unknown> {
  image?: ImageSpec;
  snapshotId?: string;
  entrypoint?: string[];
  platform?: PlatformSpec;
  secureAccess?: boolean;
  timeout?: number | null;
  resourceLimits: ResourceLimits;
  resourceRequests?: ResourceLimits;
  env?: Record<string, string>;
  metadata?: Record<string, string>;
  networkPolicy?: NetworkPolicy;
  credentialProxy?: CredentialProxyConfig;
  volumes?: Volume[];
  extensions?: Record<string, unknown>;
}
export interface CreateSandboxResponse extends Record<string, unknown> {
  id: SandboxId;
  status: SandboxStatus;
  platform?: PlatformSpec;
  metadata?: Record<string, string>;
  extensions?: Record<string, string>;
  expiresAt: Date | null;
  createdAt: Date;
  entrypoint: string[];
}
export interface ListSandboxesParams {
  states?: string[];
  metadata?: Record<string, string>;
  page?: number;
  pageSize?: number;
}
export interface RenewSandboxExpirationRequest {
  expiresAt: string;
}
/** The official raw lifecycle service (`sandbox.sandboxes`). */
export interface Sandboxes {
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
  invalidateEndpointCache?(sandboxId: SandboxId): void;
}
export interface CreateLifecycleStackOptions {
  connectionConfig: ConnectionConfig;
  lifecycleBaseUrl: string;
}
export interface LifecycleStack {
  sandboxes: Sandboxes;
}
export interface CreateExecdStackOptions {
  connectionConfig: ConnectionConfig;
  execdBaseUrl: string;
  endpointHeaders?: Record<string, string>;
}
export interface ExecdStack {
  commands: ExecdCommands;
  files: SandboxFiles;
  health: ExecdHealth;
  metrics: ExecdMetrics;
  isolation?: IsolationService;
}
export interface CreateEgressStackOptions {
  connectionConfig: ConnectionConfig;
  egressBaseUrl: string;
  endpointHeaders?: Record<string, string>;
}
export interface EgressStack {
  egress: Egress;
  credentialVault?: CredentialVault;
}
export interface AdapterFactory {
  createLifecycleStack(opts: CreateLifecycleStackOptions): LifecycleStack;
  createExecdStack(opts: CreateExecdStackOptions): ExecdStack;
  createEgressStack(opts: CreateEgressStackOptions): EgressStack;
}
/**
 * The only factory this package honours. `createLifecycleStack` gives the raw lifecycle
 * service; `createExecdStack` / `createEgressStack` throw InvalidArgumentException (the
 * native core binds those services to a Sandbox: use the sandbox's services).
 */
export declare class DefaultAdapterFactory implements AdapterFactory {
  createLifecycleStack(opts: CreateLifecycleStackOptions): LifecycleStack;
  createExecdStack(opts: CreateExecdStackOptions): ExecdStack;
  createEgressStack(opts: CreateEgressStackOptions): EgressStack;
}
export declare function createDefaultAdapterFactory(): AdapterFactory;

// ---- isolated sessions (1.1) -----------------------------------------------------------

export interface IsolatedWorkspaceSpec {
  path: string;
  mode?: 'rw' | 'overlay' | 'ro';
}
/** Extension (the 1.1 wire's `overlays`). */
export interface IsolatedOverlaySpec {
  path: string;
  mode?: 'rw' | 'overlay' | 'ro';
  persist?: boolean;
}
export interface EnvPassthroughSpec {
  mode?: 'allow' | 'deny';
  keys?: string[];
}
export interface BindMount {
  source: string;
  dest?: string;
  readonly?: boolean;
}
export interface CreateIsolatedSessionRequest {
  workspace: IsolatedWorkspaceSpec;
  /** Extension (1.1 wire). */
  overlays?: IsolatedOverlaySpec[];
  profile?: 'strict' | 'balanced';
  extra_writable?: string[];
  binds?: BindMount[];
  share_net?: boolean;
  env_passthrough?: EnvPassthroughSpec;
  uid?: number;
  gid?: number;
  uid_mode?: 'setpriv' | 'userns';
  idle_timeout_seconds?: number;
}
export interface IsolatedSessionInfo {
  session_id: string;
  created_at: string;
  profile?: 'strict' | 'balanced';
  workspace?: IsolatedWorkspaceSpec;
  /** Extension (1.1 wire). */
  overlays?: IsolatedOverlaySpec[];
  extra_writable?: string[];
  binds?: BindMount[];
  share_net?: boolean;
  env_passthrough?: EnvPassthroughSpec;
  uid?: number;
  gid?: number;
  uid_mode?: 'setpriv' | 'userns';
  idle_timeout_seconds?: number;
}
export interface IsolatedSessionState extends Omit<IsolatedSessionInfo, 'session_id' | 'created_at'> {
  status: 'active' | 'destroyed';
  created_at?: string;
  last_run_at?: string;
  idle_remaining_seconds?: number | null;
}
export interface IsolatedRunOpts {
  envs?: Record<string, string>;
  timeout_seconds?: number;
}
export interface IsolatedCapabilities {
  available: boolean;
  isolator?: string;
  version?: string;
  message?: string;
  setpriv_available?: boolean;
  userns_available?: boolean;
  commit_supported: boolean;
  diff_supported: boolean;
}
export interface IsolatedSessionSummary {
  session_id: string;
  status: string;
  created_at?: string;
  last_run_at?: string;
  idle_remaining_seconds?: number;
}
export interface ListIsolatedSessionsResponse {
  sessions?: IsolatedSessionSummary[];
}
/** Extension: a background run in an isolated session. */
export interface IsolatedBackgroundRun {
  session_id: string;
  run_id: string;
  started_at?: string;
}
/** Extension: the status of a background run. */
export interface IsolatedRunStatus {
  session_id: string;
  run_id: string;
  running: boolean;
  exit_code: number | null;
  error: string | null;
  started_at: string | null;
  finished_at: string | null;
}
/** Extension: a background run's log from a byte cursor. */
export interface IsolatedRunLogs {
  text: string;
  cursor: number;
}
export interface IsolationSession {
  readonly sessionId: string;
  readonly info: IsolatedSessionInfo;
  readonly files: SandboxFiles;
  run(code: string, opts?: IsolatedRunOpts, handlers?: ExecutionHandlers, signal?: AbortSignal): Promise<CommandExecution>;
  get(): Promise<IsolatedSessionState>;
  delete(): Promise<void>;
  /** Extension. */
  runBackground(code: string, opts?: Pick<IsolatedRunOpts, 'envs'>): Promise<IsolatedBackgroundRun>;
  /** Extension. */
  runStatus(runId: string): Promise<IsolatedRunStatus>;
  /** Extension. */
  runLogs(runId: string, cursor?: number): Promise<IsolatedRunLogs>;
}
export interface RunOnceOpts {
  workspaceMode?: 'rw' | 'overlay' | 'ro';
  runOpts?: IsolatedRunOpts;
  handlers?: ExecutionHandlers;
  profile?: 'strict' | 'balanced';
  shareNet?: boolean;
  binds?: BindMount[];
  signal?: AbortSignal;
}
export interface IsolationService {
  create(request: CreateIsolatedSessionRequest): Promise<IsolationSession>;
  attach(sessionId: string): Promise<IsolationSession>;
  capabilities(): Promise<IsolatedCapabilities>;
  list(): Promise<IsolatedSessionSummary[]>;
  runOnce(code: string, workspace: string, opts?: RunOnceOpts): Promise<CommandExecution>;
  withSession<T>(request: CreateIsolatedSessionRequest, fn: (session: IsolationSession) => Promise<T>): Promise<T>;
}

// ---- templates (1.1, extension) --------------------------------------------------------

export type TemplatePhase = 'Pending' | 'Building' | 'Succeeded' | 'Failed' | string;
export interface TemplateReadiness {
  /** `cmd://...` or `tcp://host:port`. */
  probe?: string;
  warmupSeconds?: number;
}
export interface CreateTemplateRequest {
  image: string;
  publish: string;
  resourceLimits?: ResourceLimits;
  entrypoint?: string[];
  env?: Record<string, string>;
  metadata?: Record<string, string>;
  readiness?: TemplateReadiness;
  format?: 'native' | 'overlaybd';
}
export interface TemplateInfo {
  templateId: string;
  image: string;
  publish: string;
  format: string;
  status: { phase: TemplatePhase; manifestRef?: string; message?: string };
  createdAt?: Date;
  updatedAt?: Date;
  resourceLimits?: ResourceLimits;
  entrypoint?: string[];
  env?: Record<string, string>;
  metadata?: Record<string, string>;
  readiness?: TemplateReadiness;
}
export interface TemplateFilter {
  metadata?: Record<string, string>;
  page?: number;
  pageSize?: number;
}
export interface ListTemplatesResponse {
  items: TemplateInfo[];
  pagination?: PaginationInfo;
}

// ---- lifecycle hooks (1.1, extension) --------------------------------------------------

export interface LifecycleHook {
  command: string[];
  timeoutSeconds?: number;
}
export interface PeriodicLifecycleHook extends LifecycleHook {
  name: string;
  /** 5-field cron (UTC), `@hourly`..., `@every 30s`. */
  schedule: string;
}
export interface SandboxLifecycle {
  preStart?: LifecycleHook;
  periodic?: PeriodicLifecycleHook[];
}

// ---- manager and sandbox ---------------------------------------------------------------

export interface SandboxManagerOptions {
  connectionConfig?: ConnectionConfig | ConnectionConfigOptions;
  /** Only a DefaultAdapterFactory; any other throws InvalidArgumentException. */
  adapterFactory?: AdapterFactory;
}
export interface SandboxFilter {
  states?: string[];
  metadata?: Record<string, string>;
  page?: number;
  pageSize?: number;
}

export declare class SandboxManager {
  readonly connectionConfig: ConnectionConfig;
  private constructor();
  static create(opts?: SandboxManagerOptions): SandboxManager;
  listSandboxInfos(filter?: SandboxFilter): Promise<ListSandboxesResponse>;
  getSandboxInfo(sandboxId: SandboxId): Promise<SandboxInfo>;
  patchSandboxMetadata(sandboxId: SandboxId, patch: SandboxMetadataPatch): Promise<SandboxInfo>;
  killSandbox(sandboxId: SandboxId): Promise<void>;
  pauseSandbox(sandboxId: SandboxId): Promise<void>;
  resumeSandbox(sandboxId: SandboxId): Promise<void>;
  renewSandbox(sandboxId: SandboxId, timeoutSeconds: number): Promise<void>;
  createSnapshot(sandboxId: SandboxId, req?: CreateSnapshotRequest): Promise<SnapshotInfo>;
  getSnapshot(snapshotId: string): Promise<SnapshotInfo>;
  listSnapshots(filter?: ListSnapshotsParams): Promise<ListSnapshotsResponse>;
  deleteSnapshot(snapshotId: string): Promise<void>;
  /** Extension. */
  getEndpoint(sandboxId: SandboxId, port: number): Promise<Endpoint>;
  /** Extension. */
  getDiagnosticLogs(sandboxId: SandboxId, scope: string): Promise<DiagnosticContent>;
  /** Extension. */
  getDiagnosticEvents(sandboxId: SandboxId, scope: string): Promise<DiagnosticContent>;
  /** Extension (1.1): declares a template build. */
  createTemplate(request: CreateTemplateRequest): Promise<TemplateInfo>;
  /** Extension (1.1). */
  getTemplate(templateId: string): Promise<TemplateInfo>;
  /** Extension (1.1). */
  listTemplates(filter?: TemplateFilter): Promise<ListTemplatesResponse>;
  /** Extension (1.1). */
  deleteTemplate(templateId: string): Promise<void>;
  close(): Promise<void>;
}

export interface SandboxCreateOptions {
  connectionConfig?: ConnectionConfig | ConnectionConfigOptions;
  /** Only a DefaultAdapterFactory; any other throws InvalidArgumentException. */
  adapterFactory?: AdapterFactory;
  image?: string | { uri: string; auth?: { username: string; password: string } };
  snapshotId?: string;
  entrypoint?: string[];
  env?: Record<string, string>;
  metadata?: Record<string, string>;
  networkPolicy?: NetworkPolicy;
  credentialProxy?: CredentialProxyConfig;
  volumes?: Volume[];
  extensions?: Record<string, string>;
  platform?: PlatformSpec;
  secureAccess?: boolean;
  resource?: Record<string, string>;
  /** Guaranteed minimums (`resourceRequests` on the wire); each at most its limit. */
  resourceRequests?: Record<string, string>;
  /** Extension (1.1): lifecycle hooks run inside the sandbox. */
  lifecycle?: SandboxLifecycle;
  timeoutSeconds?: number | null;
  skipHealthCheck?: boolean;
  healthCheck?: (sbx: Sandbox) => boolean | Promise<boolean>;
  readyTimeoutSeconds?: number;
  healthCheckPollingInterval?: number;
}
/** Extension (1.1): `Sandbox.createFromTemplate` options (the template fixes image, entrypoint, env, limits). */
export interface SandboxFromTemplateOptions {
  connectionConfig?: ConnectionConfig | ConnectionConfigOptions;
  adapterFactory?: AdapterFactory;
  /** Required. */
  timeoutSeconds: number;
  metadata?: Record<string, string>;
  networkPolicy?: NetworkPolicy;
  extensions?: Record<string, string>;
  skipHealthCheck?: boolean;
  healthCheck?: (sbx: Sandbox) => boolean | Promise<boolean>;
  readyTimeoutSeconds?: number;
  healthCheckPollingInterval?: number;
}
export interface SandboxConnectOptions {
  connectionConfig?: ConnectionConfig | ConnectionConfigOptions;
  adapterFactory?: AdapterFactory;
  sandboxId: SandboxId;
  skipHealthCheck?: boolean;
  healthCheck?: (sbx: Sandbox) => boolean | Promise<boolean>;
  readyTimeoutSeconds?: number;
  healthCheckPollingInterval?: number;
}

/**
 * (1.1) What backs a sandbox: `TEMPLATE` when it was created from a template or the
 * server's `OPEN-SANDBOX-ORIGIN` header says so; anything else is `UNKNOWN`.
 */
export declare enum SandboxOrigin {
  TEMPLATE = 'template',
  UNKNOWN = 'unknown',
}
export declare class Sandbox {
  readonly id: SandboxId;
  /** (1.1) What backs this sandbox. */
  readonly origin: SandboxOrigin;
  readonly connectionConfig: ConnectionConfig;
  /** The raw lifecycle service. */
  readonly sandboxes: Sandboxes;
  readonly commands: ExecdCommands;
  readonly files: SandboxFiles;
  readonly health: ExecdHealth;
  readonly metrics: ExecdMetrics;
  /** Interactive PTY sessions and live background logs (extension). */
  readonly pty: ExecdPty;
  /** Isolated sessions (1.1). */
  readonly isolation: IsolationService;
  /** The sandbox's credential vault (1.1; needs `credentialProxy: {enabled: true}`). */
  readonly credentialVault: CredentialVault;
  private constructor();
  static create(opts: SandboxCreateOptions): Promise<Sandbox>;
  /** Extension (1.1). */
  static createFromTemplate(templateId: string, opts: SandboxFromTemplateOptions): Promise<Sandbox>;
  /** Extension (1.1): the files service acting as Linux user `uid`:`gid`. */
  filesWithIdentity(uid: number, gid: number): SandboxFiles;
  static connect(opts: SandboxConnectOptions): Promise<Sandbox>;
  static resume(opts: SandboxConnectOptions): Promise<Sandbox>;
  getInfo(): Promise<SandboxInfo>;
  isHealthy(): Promise<boolean>;
  getMetrics(): Promise<SandboxMetrics>;
  pause(): Promise<void>;
  resume(opts?: { skipHealthCheck?: boolean; readyTimeoutSeconds?: number; healthCheckPollingInterval?: number }): Promise<Sandbox>;
  kill(): Promise<void>;
  close(): Promise<void>;
  renew(timeoutSeconds: number): Promise<RenewSandboxExpirationResponse>;
  patchMetadata(patch: SandboxMetadataPatch): Promise<SandboxInfo>;
  getEgressPolicy(): Promise<NetworkPolicy>;
  patchEgressRules(rules: NetworkRule[]): Promise<void>;
  deleteEgressRules(targets: string[]): Promise<void>;
  getEndpoint(port: number): Promise<Endpoint>;
  getSignedEndpoint(port: number, expires: number): Promise<Endpoint>;
  getEndpointUrl(port: number): Promise<string>;
  /** Extension. */
  createSnapshot(req?: CreateSnapshotRequest): Promise<SnapshotInfo>;
  /** Extension. */
  getDiagnosticLogs(scope: string): Promise<DiagnosticContent>;
  /** Extension. */
  getDiagnosticEvents(scope: string): Promise<DiagnosticContent>;
  waitUntilReady(opts: {
    readyTimeoutSeconds: number;
    pollingIntervalMillis: number;
    healthCheck?: (sbx: Sandbox) => boolean | Promise<boolean>;
  }): Promise<void>;
}

// ---- code interpreter (@alibaba-group/opensandbox-code-interpreter) --------------------

export type SupportedLanguage = 'python' | 'go' | 'javascript' | 'typescript' | 'bash' | 'java';
export declare const SupportedLanguages: {
  readonly PYTHON: 'python';
  readonly JAVA: 'java';
  readonly GO: 'go';
  readonly TYPESCRIPT: 'typescript';
  readonly JAVASCRIPT: 'javascript';
  readonly BASH: 'bash';
};
export interface CodeContext {
  id?: string;
  language: string;
  cwd?: string;
}
export interface RunCodeOptions {
  context?: CodeContext;
  language?: string;
  handlers?: ExecutionHandlers;
  signal?: AbortSignal;
}
export declare class Codes {
  private constructor();
  createContext(language: string, opts?: { cwd?: string }): Promise<CodeContext>;
  getContext(contextId: string): Promise<CodeContext>;
  listContexts(language?: string): Promise<CodeContext[]>;
  deleteContext(contextId: string): Promise<void>;
  deleteContexts(language: string): Promise<void>;
  run(code: string, opts?: RunCodeOptions): Promise<Execution>;
  runStream(req: { code: string; context?: CodeContext; language?: string }, signal?: AbortSignal): AsyncIterable<ServerStreamEvent>;
  interrupt(executionId: string): Promise<void>;
}
export declare class CodeInterpreter {
  readonly sandbox: Sandbox;
  readonly codes: Codes;
  readonly id: SandboxId;
  readonly files: SandboxFiles;
  readonly commands: ExecdCommands;
  readonly metrics: ExecdMetrics;
  private constructor();
  static create(sandbox: Sandbox, opts?: { adapterFactory?: AdapterFactory }): Promise<CodeInterpreter>;
}

// ---- constants ---------------------------------------------------------------------------

// ---- client-side sandbox pool ------------------------------------------------------

export declare enum AcquirePolicy {
  DIRECT_CREATE = 'DIRECT_CREATE',
  FAIL_FAST = 'FAIL_FAST',
  RETRY_NEXT_IDLE = 'RETRY_NEXT_IDLE',
  RETRY_NEXT_IDLE_THEN_CREATE = 'RETRY_NEXT_IDLE_THEN_CREATE',
}
export declare enum PoolLifecycleState {
  NOT_STARTED = 'NOT_STARTED',
  STARTING = 'STARTING',
  RUNNING = 'RUNNING',
  DRAINING = 'DRAINING',
  STOPPED = 'STOPPED',
}
export declare enum PoolState {
  HEALTHY = 'HEALTHY',
  DEGRADED = 'DEGRADED',
  DRAINING = 'DRAINING',
  STOPPED = 'STOPPED',
}
/** The earlier official health enum (the snapshot's `healthState`). */
export declare enum PoolHealthState {
  HEALTHY = 'HEALTHY',
  DEGRADED = 'DEGRADED',
}
export declare enum PoolDestroyState {
  ACTIVE = 'ACTIVE',
  DESTROYING = 'DESTROYING',
  DESTROYED = 'DESTROYED',
}
export declare enum PoolDestroyStrategy {
  FORCE = 'FORCE',
}
export declare enum PooledSandboxCreateReason {
  WARMUP = 'WARMUP',
  DIRECT_CREATE = 'DIRECT_CREATE',
}

export interface IdleEntry {
  sandboxId: string;
  expiresAt: Date;
}
export interface TakeIdleResult {
  sandboxId?: string;
  discardedAliveSandboxIds: string[];
}
export interface ReapResult {
  discardedAliveSandboxIds: string[];
}
export interface StoreCounters {
  idleCount: number;
}

/**
 * Persistence contract of a pool. Distributed implementations make each method atomic:
 * taking an idle entry removes it, `putIdle` is idempotent per (poolName, sandboxId),
 * lock renew/release succeed only for the current owner.
 */
export interface PoolStateStore {
  tryTakeIdle(poolName: string): Promise<string | undefined>;
  tryTakeIdleWithMinTtl(poolName: string, minRemainingTtlSeconds: number): Promise<TakeIdleResult>;
  putIdle(poolName: string, sandboxId: string): Promise<void>;
  removeIdle(poolName: string, sandboxId: string): Promise<void>;
  tryAcquirePrimaryLock(poolName: string, ownerId: string, ttlSeconds: number): Promise<boolean>;
  renewPrimaryLock(poolName: string, ownerId: string, ttlSeconds: number): Promise<boolean>;
  releasePrimaryLock(poolName: string, ownerId: string): Promise<void>;
  reapExpiredIdle(poolName: string, now: Date): Promise<void>;
  reapExpiredIdleWithMinTtl(poolName: string, now: Date, minRemainingTtlSeconds: number): Promise<ReapResult>;
  snapshotCounters(poolName: string): Promise<StoreCounters>;
  snapshotIdleEntries(poolName: string): Promise<IdleEntry[]>;
  getMaxIdle(poolName: string): Promise<number | undefined>;
  setMaxIdle(poolName: string, maxIdle: number): Promise<void>;
  setIdleEntryTtl(poolName: string, ttlSeconds: number): Promise<void>;
  getDestroyState(poolName: string): Promise<PoolDestroyState>;
  beginDestroy(poolName: string, ownerId: string): Promise<void>;
  clearPoolState(poolName: string): Promise<void>;
  markDestroyed(poolName: string, ownerId: string, tombstoneTtlSeconds?: number | null): Promise<void>;
}

/** Process-local pool state (one JavaScript runtime). */
export declare class InMemoryPoolStateStore implements PoolStateStore {
  constructor();
  tryTakeIdle(poolName: string): Promise<string | undefined>;
  tryTakeIdleWithMinTtl(poolName: string, minRemainingTtlSeconds: number): Promise<TakeIdleResult>;
  putIdle(poolName: string, sandboxId: string): Promise<void>;
  removeIdle(poolName: string, sandboxId: string): Promise<void>;
  tryAcquirePrimaryLock(poolName: string, ownerId: string, ttlSeconds: number): Promise<boolean>;
  renewPrimaryLock(poolName: string, ownerId: string, ttlSeconds: number): Promise<boolean>;
  releasePrimaryLock(poolName: string, ownerId: string): Promise<void>;
  reapExpiredIdle(poolName: string, now: Date): Promise<void>;
  reapExpiredIdleWithMinTtl(poolName: string, now: Date, minRemainingTtlSeconds: number): Promise<ReapResult>;
  snapshotCounters(poolName: string): Promise<StoreCounters>;
  snapshotIdleEntries(poolName: string): Promise<IdleEntry[]>;
  getMaxIdle(poolName: string): Promise<number | undefined>;
  setMaxIdle(poolName: string, maxIdle: number): Promise<void>;
  setIdleEntryTtl(poolName: string, ttlSeconds: number): Promise<void>;
  getDestroyState(poolName: string): Promise<PoolDestroyState>;
  beginDestroy(poolName: string, ownerId: string): Promise<void>;
  clearPoolState(poolName: string): Promise<void>;
  markDestroyed(poolName: string, ownerId: string, tombstoneTtlSeconds?: number | null): Promise<void>;
}

export interface PoolSnapshot {
  state: PoolState;
  lifecycleState: PoolLifecycleState;
  /** The earlier official field: HEALTHY / DEGRADED whatever the lifecycle. */
  healthState: PoolHealthState;
  idleCount: number;
  maxIdle: number;
  failureCount: number;
  backoffActive: boolean;
  lastError?: string;
  inFlightOperations: number;
}

export type PoolCreationSpec = Omit<
  SandboxCreateOptions,
  'connectionConfig' | 'timeoutSeconds' | 'skipHealthCheck' | 'readyTimeoutSeconds' | 'healthCheckPollingInterval' | 'healthCheck'
>;

export interface PooledSandboxCreateContext {
  poolName: string;
  ownerId: string;
  idleTimeoutSeconds: number;
  reason: PooledSandboxCreateReason;
  readyTimeoutSeconds: number;
  healthCheckPollingIntervalMillis: number;
  skipHealthCheck: boolean;
  healthCheck?: PoolHealthCheck;
  connectionConfig: ConnectionConfig;
  createConnectionConfig: ConnectionConfig;
  creationSpec: PoolCreationSpec;
  signal?: AbortSignal;
}
export type PooledSandboxCreator = (context: PooledSandboxCreateContext) => Promise<Sandbox>;
export type PoolHealthCheck = (sandbox: Sandbox) => boolean | Promise<boolean>;
export type PoolSandboxPreparer = (sandbox: Sandbox) => void | Promise<void>;
export interface PoolLogger {
  debug?(message: string, fields?: Record<string, unknown>): void;
  info?(message: string, fields?: Record<string, unknown>): void;
  warn?(message: string, fields?: Record<string, unknown>): void;
}

export interface SandboxPoolOptions {
  poolName: string;
  maxIdle: number;
  connectionConfig: ConnectionConfig | ConnectionConfigOptions;
  /** Exactly one of image / snapshotId unless sandboxCreator is given. */
  creationSpec?: PoolCreationSpec;
  sandboxCreator?: PooledSandboxCreator;
  /** Default: a new InMemoryPoolStateStore (single process). */
  stateStore?: PoolStateStore;
  ownerId?: string;
  /** Warmup creates started per reconcile tick (default 10). */
  warmupCreateQps?: number;
  /** Warmups in flight at once (default max(1, ceil(maxIdle * 0.2))). */
  warmupConcurrency?: number;
  /** Default 60. */
  primaryLockTtlSeconds?: number;
  /** Extension: the reconcile tick (default 1 s). */
  reconcileIntervalSeconds?: number;
  /** Consecutive failed reconciles before DEGRADED and backoff (default 3). */
  degradedThreshold?: number;
  /** The earlier official name of the default acquire policy (default DIRECT_CREATE). */
  emptyBehavior?: AcquirePolicy;
  /** Idle entry TTL and the idle sandbox's server timeout (default 86400). */
  idleTimeoutSeconds?: number;
  /** Graceful shutdown's wait for in-flight work (default 30). */
  drainTimeoutSeconds?: number;
  /** Default min(idleTimeoutSeconds / 2, 60). */
  acquireMinRemainingTtlSeconds?: number;
  acquireReadyTimeoutSeconds?: number;
  acquireHealthCheckPollingIntervalMillis?: number;
  acquireHealthCheck?: PoolHealthCheck;
  acquireSkipHealthCheck?: boolean;
  /** Idle candidates tried by the RETRY_NEXT_IDLE policies (default 3). */
  maxAcquireRetries?: number;
  warmupReadyTimeoutSeconds?: number;
  warmupHealthCheckInitialDelayMillis?: number;
  warmupHealthCheckPollingIntervalMillis?: number;
  warmupHealthCheck?: PoolHealthCheck;
  warmupSandboxPreparer?: PoolSandboxPreparer;
  /** The earlier official name of warmupSandboxPreparer. */
  warmupPreparer?: PoolSandboxPreparer;
  warmupPostPrepareHealthCheck?: PoolHealthCheck;
  warmupPostPrepareHealthCheckTimeoutSeconds?: number;
  warmupSkipHealthCheck?: boolean;
  logger?: PoolLogger;
}

export interface SandboxAcquireOptions {
  /** Renews the acquired sandbox to this timeout. */
  sandboxTimeoutSeconds?: number;
  policy?: AcquirePolicy;
  minRemainingTtlSeconds?: number;
  skipHealthCheck?: boolean;
  signal?: AbortSignal;
}

/** A client-side buffer of clean, ready sandboxes. */
export declare class SandboxPool {
  private constructor();
  static create(options: SandboxPoolOptions): SandboxPool;
  static inMemoryStateStore(): InMemoryPoolStateStore;
  readonly poolName: string;
  readonly ownerId: string;
  start(): Promise<void>;
  acquire(options?: SandboxAcquireOptions): Promise<Sandbox>;
  resize(maxIdle: number): Promise<void>;
  releaseAllIdle(): Promise<number>;
  snapshot(): Promise<PoolSnapshot>;
  snapshotIdleEntries(): Promise<IdleEntry[]>;
  shutdown(graceful?: boolean): Promise<void>;
  close(): Promise<void>;
}

export interface PoolDestroyOptions {
  strategy?: PoolDestroyStrategy;
  drainTimeoutSeconds?: number;
  /** Default 7 days; null = a tombstone that never expires. */
  tombstoneTtlSeconds?: number | null;
}
export interface PoolDestroyResult {
  poolName: string;
  state: PoolDestroyState;
  drainedIdleCount: number;
  killedIdleCount: number;
  persistentStateCleared: boolean;
}
export interface SandboxPoolManagerOptions {
  stateStore: PoolStateStore;
  connectionConfig: ConnectionConfig | ConnectionConfigOptions;
  ownerId?: string;
  logger?: PoolLogger;
  /** Only a DefaultAdapterFactory; any other throws InvalidArgumentException. */
  adapterFactory?: AdapterFactory;
}
/** Administrative operations on a shared pool namespace. */
export declare class SandboxPoolManager {
  constructor(options: SandboxPoolManagerOptions);
  static create(options: SandboxPoolManagerOptions): SandboxPoolManager;
  destroy(poolName: string, options?: PoolDestroyOptions): Promise<PoolDestroyResult>;
}

export declare const DEFAULT_EXECD_PORT: 44772;
export declare const DEFAULT_EGRESS_PORT: 18080;
export declare const DEFAULT_ENTRYPOINT: string[];
export declare const DEFAULT_RESOURCE_LIMITS: Record<string, string>;
export declare const DEFAULT_TIMEOUT_SECONDS: 600;
export declare const DEFAULT_READY_TIMEOUT_SECONDS: 30;
export declare const DEFAULT_HEALTH_CHECK_POLLING_INTERVAL_MILLIS: 200;
export declare const DEFAULT_REQUEST_TIMEOUT_SECONDS: 30;
/** Extension: this package's version. */
export declare const VERSION: string;
