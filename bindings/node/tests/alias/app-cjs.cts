// The same through require() types (the `require` condition's .d.cts).
import opensandbox = require("@alibaba-group/opensandbox");

export async function viaRequire(): Promise<string | undefined> {
  const sandbox = await opensandbox.Sandbox.create({ image: "ubuntu" });
  return (await sandbox.commands.run("echo hi")).logs.stdout[0]?.text;
}
