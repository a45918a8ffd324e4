// ESM entry: re-exports the CommonJS implementation (one module instance).
import m from './lib/index.js';

export const {
  ConnectionConfig,
  Sandbox,
  SandboxManager,
  ExecdCommands,
  SandboxFiles,
  ExecdHealth,
  ExecdMetrics,
  ExecutionEventDispatcher,
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
