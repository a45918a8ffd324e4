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
  | (string & {});

export declare class SandboxError {
  readonly code: SandboxErrorCode;
  readonly message?: string;
  static readonly INTERNAL_UNKNOWN_ERROR: SandboxErrorCode;
  static readonly READY_TIMEOUT: SandboxErrorCode;
  static readonly UNHEALTHY: SandboxErrorCode;
  static readonly INVALID_ARGUMENT: SandboxErrorCode;
  static readonly UNEXPECTED_RESPONSE: SandboxErrorCode;
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

// ---- connection ---------------------------------------------------------------------

export interface ConnectionConfigOptions {
  domain?: string;
  protocol?: ConnectionProtocol;
  apiKey?: string;
  headers?: Record<string, string>;
  requestTimeoutSeconds?: number;
  debug?: boolean;
  useServerProxy?: boolean;
  endpointCacheTtlMs?: number;
  endpointCacheSize?: number;
  endpointCacheDisabled?: boolean;
  disableMetrics?: boolean;
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
  constructor(opts?: ConnectionConfigOptions);
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
export type SandboxState = 'Pending' | 'Running' | 'Pausing' | 'Paused' | 'Stopping' | 'Terminated' | 'Failed' | string;
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

// ---- manager and sandbox ---------------------------------------------------------------

export interface SandboxManagerOptions {
  connectionConfig?: ConnectionConfig | ConnectionConfigOptions;
  /** Not supported: passing one throws InvalidArgumentException. */
  adapterFactory?: unknown;
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
  close(): Promise<void>;
}

export interface SandboxCreateOptions {
  connectionConfig?: ConnectionConfig | ConnectionConfigOptions;
  /** Not supported: passing one throws InvalidArgumentException. */
  adapterFactory?: unknown;
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
  timeoutSeconds?: number | null;
  skipHealthCheck?: boolean;
  healthCheck?: (sbx: Sandbox) => boolean | Promise<boolean>;
  readyTimeoutSeconds?: number;
  healthCheckPollingInterval?: number;
}
export interface SandboxConnectOptions {
  connectionConfig?: ConnectionConfig | ConnectionConfigOptions;
  adapterFactory?: unknown;
  sandboxId: SandboxId;
  skipHealthCheck?: boolean;
  healthCheck?: (sbx: Sandbox) => boolean | Promise<boolean>;
  readyTimeoutSeconds?: number;
  healthCheckPollingInterval?: number;
}

export declare class Sandbox {
  readonly id: SandboxId;
  readonly connectionConfig: ConnectionConfig;
  /** The lifecycle service, a SandboxManager over the same configuration. */
  readonly sandboxes: SandboxManager;
  readonly commands: ExecdCommands;
  readonly files: SandboxFiles;
  readonly health: ExecdHealth;
  readonly metrics: ExecdMetrics;
  /** Interactive PTY sessions and live background logs (extension). */
  readonly pty: ExecdPty;
  private constructor();
  static create(opts: SandboxCreateOptions): Promise<Sandbox>;
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
  static create(sandbox: Sandbox, opts?: { adapterFactory?: unknown }): Promise<CodeInterpreter>;
}

// ---- constants ---------------------------------------------------------------------------

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
