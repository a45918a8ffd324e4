'use strict';
// The official exception classes, and the decoding of native errors into them.

const MARKER = '\u0001OSB';

class SandboxError {
  constructor(code, message) {
    this.code = code;
    this.message = message;
  }
}
SandboxError.INTERNAL_UNKNOWN_ERROR = 'INTERNAL_UNKNOWN_ERROR';
SandboxError.READY_TIMEOUT = 'READY_TIMEOUT';
SandboxError.UNHEALTHY = 'UNHEALTHY';
SandboxError.INVALID_ARGUMENT = 'INVALID_ARGUMENT';
SandboxError.UNEXPECTED_RESPONSE = 'UNEXPECTED_RESPONSE';
SandboxError.POOL_EMPTY = 'POOL_EMPTY';
SandboxError.POOL_ACQUIRE_FAILED = 'POOL_ACQUIRE_FAILED';
SandboxError.POOL_NOT_RUNNING = 'POOL_NOT_RUNNING';
SandboxError.POOL_STATE_STORE_UNAVAILABLE = 'POOL_STATE_STORE_UNAVAILABLE';
SandboxError.POOL_DESTROYED = 'POOL_DESTROYED';
SandboxError.POOL_DESTROY_INCOMPLETE = 'POOL_DESTROY_INCOMPLETE';

class SandboxException extends Error {
  constructor(opts = {}) {
    super(opts.message);
    this.name = 'SandboxException';
    this.cause = opts.cause;
    this.error = opts.error ?? new SandboxError(SandboxError.INTERNAL_UNKNOWN_ERROR);
    this.requestId = opts.requestId;
  }
}

class SandboxApiException extends SandboxException {
  constructor(opts = {}) {
    super({
      message: opts.message,
      cause: opts.cause,
      error: opts.error ?? new SandboxError(SandboxError.UNEXPECTED_RESPONSE, opts.message),
      requestId: opts.requestId,
    });
    this.name = 'SandboxApiException';
    this.statusCode = opts.statusCode;
    this.rawBody = opts.rawBody;
  }
}

function simple(name, code) {
  const C = class extends SandboxException {
    constructor(opts = {}) {
      super({ message: opts.message, cause: opts.cause, error: new SandboxError(code, opts.message) });
      this.name = name;
    }
  };
  Object.defineProperty(C, 'name', { value: name });
  return C;
}

const SandboxInternalException = simple('SandboxInternalException', SandboxError.INTERNAL_UNKNOWN_ERROR);
const SandboxUnhealthyException = simple('SandboxUnhealthyException', SandboxError.UNHEALTHY);
const SandboxReadyTimeoutException = simple('SandboxReadyTimeoutException', SandboxError.READY_TIMEOUT);
const InvalidArgumentException = simple('InvalidArgumentException', SandboxError.INVALID_ARGUMENT);

// The client-side pool's exceptions: the official constructors (pool name first, the
// message built from it) and error codes.
function poolError(name, code, message) {
  const C = class extends SandboxException {
    constructor(...args) {
      const { text, cause } = message(...args);
      super({ message: text, cause, error: new SandboxError(code, text) });
      this.name = name;
    }
  };
  Object.defineProperty(C, 'name', { value: name });
  return C;
}

const PoolEmptyException = poolError('PoolEmptyException', SandboxError.POOL_EMPTY, (pool) => ({
  text: `Sandbox pool '${pool}' has no idle sandbox available`,
}));
const PoolAcquireFailedException = poolError(
  'PoolAcquireFailedException',
  SandboxError.POOL_ACQUIRE_FAILED,
  (pool, cause) => ({ text: `Sandbox pool '${pool}' could not acquire a usable idle sandbox`, cause }),
);
const PoolNotRunningException = poolError('PoolNotRunningException', SandboxError.POOL_NOT_RUNNING, (pool, state) => ({
  text: `Sandbox pool '${pool}' is not running (state=${state})`,
}));
const PoolStateStoreUnavailableException = poolError(
  'PoolStateStoreUnavailableException',
  SandboxError.POOL_STATE_STORE_UNAVAILABLE,
  (operation, cause) => ({ text: `Sandbox pool state store operation '${operation}' failed`, cause }),
);
const PoolDestroyedException = poolError('PoolDestroyedException', SandboxError.POOL_DESTROYED, (pool, state) => ({
  text: `Sandbox pool '${pool}' namespace is ${state}`,
}));
const PoolDestroyIncompleteException = poolError(
  'PoolDestroyIncompleteException',
  SandboxError.POOL_DESTROY_INCOMPLETE,
  (pool, cause) => ({ text: `Sandbox pool '${pool}' destroy did not complete`, cause }),
);

/** Sets the extra, non-enumerable fields every exception of ours carries. */
function annotate(ex, p) {
  for (const [k, v] of Object.entries({ kind: p.kind, operation: p.operation })) {
    Object.defineProperty(ex, k, { value: v ?? undefined, enumerable: false, writable: true });
  }
  if (ex.requestId === undefined && p.requestId) {
    Object.defineProperty(ex, 'requestId', { value: p.requestId, enumerable: true, writable: true });
  }
  return ex;
}

function parseBody(body) {
  if (body == null) return undefined;
  try {
    return JSON.parse(body);
  } catch {
    return body;
  }
}

/** Turns a native error (or anything else) into an official exception. */
function fromNative(e) {
  const msg = e && typeof e.message === 'string' ? e.message : null;
  if (!msg || !msg.startsWith(MARKER)) return e;
  let p;
  try {
    p = JSON.parse(msg.slice(MARKER.length));
  } catch {
    return new SandboxInternalException({ message: msg.slice(MARKER.length) });
  }
  const message = p.message ?? '';
  const cause = p.cause ?? undefined;
  let ex;
  switch (p.kind) {
    case 'ready_timeout':
      ex = new SandboxReadyTimeoutException({ message, cause });
      break;
    case 'invalid_argument':
      ex = new InvalidArgumentException({ message, cause });
      break;
    case 'internal':
      ex = new SandboxInternalException({ message, cause });
      break;
    default:
      ex = new SandboxApiException({
        message,
        cause,
        statusCode: p.status ?? undefined,
        rawBody: parseBody(p.body),
        requestId: p.requestId ?? undefined,
        error: new SandboxError(p.code ?? SandboxError.UNEXPECTED_RESPONSE, message),
      });
  }
  return annotate(ex, p);
}

/** Awaits a native promise, mapping its error. */
async function call(p) {
  try {
    return await p;
  } catch (e) {
    throw fromNative(e);
  }
}

module.exports = {
  SandboxError,
  SandboxException,
  SandboxApiException,
  SandboxInternalException,
  SandboxUnhealthyException,
  SandboxReadyTimeoutException,
  InvalidArgumentException,
  PoolEmptyException,
  PoolAcquireFailedException,
  PoolNotRunningException,
  PoolStateStoreUnavailableException,
  PoolDestroyedException,
  PoolDestroyIncompleteException,
  fromNative,
  call,
};
