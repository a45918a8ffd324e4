//! Create a sandbox, run a command with live output, write and read a file, clean up.
//!
//! Needs a server: `OPEN_SANDBOX_DOMAIN=127.0.0.1:8080 OPEN_SANDBOX_API_KEY=... \
//! cargo run -p opensandbox-core --example quickstart`

use opensandbox_core::models::{ReadOptions, RunCommandOptions};
use opensandbox_core::{
    ConnectionConfig, ExecutionHandlers, OutputMessage, RunControl, Sandbox, SandboxCreateOptions,
};

/// Prints output as it arrives.
struct Print;

impl ExecutionHandlers for Print {
    fn on_stdout(&mut self, m: &OutputMessage) -> opensandbox_core::Result<()> {
        println!("stdout: {}", m.text);
        Ok(())
    }
    fn on_stderr(&mut self, m: &OutputMessage) -> opensandbox_core::Result<()> {
        eprintln!("stderr: {}", m.text);
        Ok(())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Domain and key come from OPEN_SANDBOX_DOMAIN / OPEN_SANDBOX_API_KEY.
    let config = ConnectionConfig::new();
    let sandbox = Sandbox::create(config, SandboxCreateOptions::image("python:3.12")).await?;
    println!("sandbox {} is ready", sandbox.id());

    let execution = sandbox
        .execd()
        .run_command(
            "echo hello from $(hostname); echo and an error >&2; exit 3",
            &RunCommandOptions::default(),
            RunControl::default(),
            &mut Print,
        )
        .await?;
    println!("exit code: {:?}", execution.exit_code);

    sandbox
        .execd()
        .write_file("/tmp/hello.txt", "Hello, sandbox!\n")
        .await?;
    let text = sandbox
        .execd()
        .read_file("/tmp/hello.txt", &ReadOptions::default())
        .await?;
    print!("read back: {text}");

    sandbox.kill().await?;
    Ok(())
}
