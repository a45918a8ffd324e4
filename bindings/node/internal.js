// The ./internal entry (ESM) over lib/internal.cjs: advanced, not stable API.
import m from './lib/internal.cjs';

export const {
  SandboxesAdapter,
  EgressAdapter,
  HealthAdapter,
  MetricsAdapter,
  FilesystemAdapter,
  CommandsAdapter,
  IsolatedSessionsAdapter,
} = m;
export default m;
