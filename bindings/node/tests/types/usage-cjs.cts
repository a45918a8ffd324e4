// Type-checked by `make test-node`: CommonJS consumers get the same declarations
// (lib/index.d.cts, the `require` condition's types).
import { Sandbox, SandboxManager, type SandboxInfo } from '../../lib/index.cjs';
import { CodeInterpreter } from '../../lib/code-interpreter.cjs';
import { SandboxesAdapter } from '../../lib/internal.cjs';

export async function cjsUser(): Promise<SandboxInfo> {
  const sandbox = await Sandbox.create({ image: 'python:3.11', resourceRequests: { cpu: '1' } });
  await CodeInterpreter.create(sandbox);
  void SandboxesAdapter;
  await sandbox.isolation.list();
  return SandboxManager.create().getSandboxInfo(sandbox.id);
}
