'use strict';
// The `./internal` entry (official `@alibaba-group/opensandbox/internal`: low-level
// clients and adapters, "not stable public API"). The adapters are this package's service
// classes under the official names (the objects a Sandbox hands out are instances of
// them); their constructors take a Sandbox or a ConnectionConfig, not an OpenAPI client.
// Not here: the fetch-based OpenAPI clients (`create{Lifecycle,Execd,Egress}Client`: the
// transport is the native core) and the client-IP helpers.

const m = require('./index.cjs');
const { EgressService } = require('./egress.cjs');
const { IsolationService } = require('./isolation.cjs');
const { SandboxesService } = require('./sandboxes.cjs');

module.exports = {
  SandboxesAdapter: SandboxesService,
  EgressAdapter: EgressService,
  HealthAdapter: m.ExecdHealth,
  MetricsAdapter: m.ExecdMetrics,
  FilesystemAdapter: m.SandboxFiles,
  CommandsAdapter: m.ExecdCommands,
  IsolatedSessionsAdapter: IsolationService,
};
