// Type-checked against the package installed as `@alibaba-group/opensandbox`
// (tests/alias/run.sh with TSC set): the official README's TypeScript, resolved through
// the package's `exports` types conditions, ESM and CommonJS alike.
import { ConnectionConfig, Sandbox, SandboxException, type ExecutionHandlers } from "@alibaba-group/opensandbox";
import type { SandboxesAdapter } from "@alibaba-group/opensandbox/internal";

export async function quickStart(): Promise<void> {
  const config = new ConnectionConfig({ domain: "api.opensandbox.io", apiKey: "your-api-key" });
  try {
    const sandbox = await Sandbox.create({ connectionConfig: config, image: "ubuntu", timeoutSeconds: 10 * 60 });
    const execution = await sandbox.commands.run("echo 'Hello Sandbox!'");
    console.log(execution.logs.stdout[0]?.text);
    const handlers: ExecutionHandlers = {
      onStdout: (m) => console.log("STDOUT:", m.text),
      onExecutionComplete: (c) => console.log("Finished in", c.executionTimeMs, "ms"),
    };
    await sandbox.commands.run("echo 1", undefined, handlers);
    const caps = await sandbox.isolation.capabilities();
    void caps.available;
    await sandbox.kill();
    await sandbox.close();
  } catch (err) {
    if (err instanceof SandboxException) console.error(`[${err.error.code}] ${err.requestId ?? "N/A"}`);
  }
}
export type Raw = SandboxesAdapter;
