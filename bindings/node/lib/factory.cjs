'use strict';
// The official adapter factory (`DefaultAdapterFactory`, `createDefaultAdapterFactory`).
// In the official package it builds fetch-based adapters from base URLs; here every call
// goes through the native core, which binds execd and egress services to a sandbox
// handle, not to a URL. So the lifecycle stack is real (the raw `Sandboxes` service of a
// ConnectionConfig), while execd and egress stacks fail loudly: they exist only as the
// services of a `Sandbox` (`sandbox.commands`, `sandbox.files`, ...). A custom factory
// (a different transport) cannot be honoured and is refused where it is passed.

const { InvalidArgumentException } = require('./errors.cjs');
const { SandboxesService } = require('./sandboxes.cjs');

function bySandbox(what) {
  return new InvalidArgumentException({
    message:
      `${what}: opensandbox-node binds execd and egress services to a sandbox in its native core; ` +
      'use Sandbox.create / Sandbox.connect and the sandbox\'s services instead',
  });
}

class DefaultAdapterFactory {
  /** `{connectionConfig, lifecycleBaseUrl}` → `{sandboxes}` (the raw lifecycle service). */
  createLifecycleStack(opts = {}) {
    const config = opts.connectionConfig;
    if (config == null || typeof config._native !== 'function') {
      throw new InvalidArgumentException({ message: 'createLifecycleStack: connectionConfig must be a ConnectionConfig' });
    }
    if (opts.lifecycleBaseUrl != null && opts.lifecycleBaseUrl !== config.getBaseUrl()) {
      throw new InvalidArgumentException({
        message: `createLifecycleStack: lifecycleBaseUrl ${opts.lifecycleBaseUrl} differs from the config's ${config.getBaseUrl()}`,
      });
    }
    return { sandboxes: new SandboxesService(config) };
  }

  createExecdStack() {
    throw bySandbox('createExecdStack');
  }

  createEgressStack() {
    throw bySandbox('createEgressStack');
  }
}

function createDefaultAdapterFactory() {
  return new DefaultAdapterFactory();
}

/** Only this package's own factory can be honoured: another one means another transport. */
function checkAdapterFactory(f) {
  if (f == null || f instanceof DefaultAdapterFactory) return;
  throw new InvalidArgumentException({
    message: 'a custom adapterFactory is not supported by opensandbox-node (its transport is the native core)',
  });
}

module.exports = { DefaultAdapterFactory, createDefaultAdapterFactory, checkAdapterFactory };
