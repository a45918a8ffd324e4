// The package entry (ESM). The implementation is one CommonJS module (lib/index.cjs, which
// loads the native addon), re-exported here so that import and require share one
// instance: a Sandbox made through either is the same class.
import m from './lib/index.cjs';

export const {
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
  DefaultAdapterFactory,
  createDefaultAdapterFactory,
  CodeInterpreter,
  Codes,
  SupportedLanguages,
  SandboxError,
  SandboxException,
  SandboxApiException,
  SandboxInternalException,
  SandboxUnhealthyException,
  SandboxReadyTimeoutException,
  InvalidArgumentException,
  DEFAULT_EXECD_PORT,
  DEFAULT_EGRESS_PORT,
  DEFAULT_ENTRYPOINT,
  DEFAULT_RESOURCE_LIMITS,
  DEFAULT_TIMEOUT_SECONDS,
  DEFAULT_READY_TIMEOUT_SECONDS,
  DEFAULT_HEALTH_CHECK_POLLING_INTERVAL_MILLIS,
  DEFAULT_REQUEST_TIMEOUT_SECONDS,
  VERSION,
} = m;
export default m;
