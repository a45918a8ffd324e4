// The official README's Quick Start through require() (CommonJS), with the package
// installed as `@alibaba-group/opensandbox` from our tarball (tests/alias/run.sh).
const { ConnectionConfig, Sandbox, SandboxException } = require("@alibaba-group/opensandbox");
const esmEntry = import("@alibaba-group/opensandbox");

async function main() {
  const config = new ConnectionConfig({
    domain: process.env.OPEN_SANDBOX_DOMAIN,
    apiKey: process.env.OPEN_SANDBOX_API_KEY,
  });
  const sandbox = await Sandbox.create({ connectionConfig: config, image: "python:3.11", timeoutSeconds: 10 * 60 });
  try {
    const execution = await sandbox.commands.run("echo 'Hello Sandbox!'");
    console.log(execution.logs.stdout[0]?.text);
    if (execution.logs.stdout[0]?.text !== "Hello Sandbox!") throw new Error("unexpected output");
    // One module instance: the class seen through import() is the one require() gave.
    if ((await esmEntry).Sandbox !== Sandbox) throw new Error("import and require gave different classes");
  } finally {
    await sandbox.kill();
    await sandbox.close();
  }
  console.log("alias CJS: ok");
}

main().catch((err) => {
  if (err instanceof SandboxException) console.error(`Sandbox Error: [${err.error.code}] ${err.error.message ?? ""}`);
  else console.error(err);
  process.exit(1);
});
