// Written against the official @alibaba-group/opensandbox README (Quick Start, usage
// examples 1-5), unchanged but for the connection settings and the image, and installed
// as `@alibaba-group/opensandbox` from our tarball (tests/alias/run.sh). ESM.
import { ConnectionConfig, Sandbox, SandboxException, SandboxManager } from "@alibaba-group/opensandbox";
import { CommandsAdapter } from "@alibaba-group/opensandbox/internal";
import assert from "node:assert/strict";

const config = new ConnectionConfig({
  domain: process.env.OPEN_SANDBOX_DOMAIN,
  apiKey: process.env.OPEN_SANDBOX_API_KEY,
  requestTimeoutSeconds: 60,
});

try {
  const sandbox = await Sandbox.create({
    connectionConfig: config,
    image: "python:3.11",
    timeoutSeconds: 10 * 60,
  });

  const execution = await sandbox.commands.run("echo 'Hello Sandbox!'");
  console.log(execution.logs.stdout[0]?.text);
  assert.equal(execution.logs.stdout[0]?.text, "Hello Sandbox!");
  assert.ok(sandbox.commands instanceof CommandsAdapter);

  const info = await sandbox.getInfo();
  console.log("State:", info.status.state);
  assert.ok(info.createdAt instanceof Date);

  const seen = [];
  await sandbox.commands.run('for i in 1 2 3; do echo "Count $i"; done', undefined, {
    onStdout: (m) => seen.push(m.text),
    onExecutionComplete: (c) => console.log("Finished in", c.executionTimeMs, "ms"),
  });
  assert.deepEqual(seen, ["Count 1", "Count 2", "Count 3"]);

  await sandbox.files.createDirectories([{ path: "/tmp/demo", mode: 755 }]);
  await sandbox.files.writeFiles([{ path: "/tmp/demo/hello.txt", data: "Hello World", mode: 644 }]);
  const content = await sandbox.files.readFile("/tmp/demo/hello.txt");
  assert.equal(content, "Hello World");
  const files = await sandbox.files.search({ path: "/tmp/demo", pattern: "*.txt" });
  assert.deepEqual(files.map((f) => f.path), ["/tmp/demo/hello.txt"]);

  const manager = SandboxManager.create({ connectionConfig: config });
  const list = await manager.listSandboxInfos({ states: ["Running"], pageSize: 10 });
  assert.ok(list.items.some((s) => s.id === sandbox.id));
  const raw = await sandbox.sandboxes.getSandbox(sandbox.id);
  assert.equal(raw.id, sandbox.id);

  await sandbox.kill();
  await sandbox.close();
  await manager.close();
  console.log("alias ESM: ok");
} catch (err) {
  if (err instanceof SandboxException) {
    console.error(`Sandbox Error: [${err.error.code}] ${err.error.message ?? ""}`);
    console.error(`Request ID: ${err.requestId ?? "N/A"}`);
  } else {
    console.error(err);
  }
  process.exit(1);
}
