//! `opensandbox-server`: the reference server, and (`agent` subcommand) the execd
//! agent that runs inside each sandbox.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use opensandbox_server::agent::{self, AgentArgs};
use opensandbox_server::control::{self, ServeArgs};
use tracing_subscriber::EnvFilter;

/// OpenSandbox reference server: the lifecycle API, with each sandbox isolated by
/// bubblewrap and its execd API served through `/sandboxes/{id}/proxy/44772/...`.
#[derive(Debug, Parser)]
#[command(
    name = "opensandbox-server",
    version,
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the execd agent (started by the server inside each sandbox).
    Agent(AgentArgs),
    /// Manage the image cache of a data directory (pull, ls, rm) and push local
    /// OCI layouts to a registry.
    Images(opensandbox_server::control::oci::cli::ImagesArgs),
    /// (internal) Start the shell of an isolated session in its namespaces; run by
    /// the agent inside a sandbox.
    #[command(hide = true)]
    IsolatedLaunch(agent::isolated::LauncherArgs),
}

/// Logs go to stderr; stdout carries only the "listening on" line.
fn init_tracing(filter: &str) -> Result<(), String> {
    let filter =
        EnvFilter::try_new(filter).map_err(|e| format!("invalid log level {filter:?}: {e}"))?;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    Ok(())
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        // Before any runtime or thread: the launcher forks into new namespaces.
        Some(Command::IsolatedLaunch(args)) => {
            ExitCode::from(agent::isolated::launcher::main(args))
        }
        Some(Command::Agent(mut args)) => {
            // The agent's output lands in the sandbox log (diagnostics); RUST_LOG is
            // passed into the sandbox for debugging.
            let level = std::env::var("RUST_LOG").unwrap_or_else(|_| "info".to_string());
            if let Err(e) = init_tracing(&level) {
                eprintln!("opensandbox-server agent: {e}");
                return ExitCode::from(2);
            }
            // A warm sandbox waits here, still single-threaded, for what makes it a
            // particular sandbox (its environment is set on this process).
            if let Some(fd) = args.start_fd {
                match agent::start::read(fd) {
                    Ok(Some(message)) => {
                        agent::start::apply_env(&message);
                        args.entrypoint = message.entrypoint;
                        args.output_framing = message.output_framing;
                    }
                    Ok(None) => return ExitCode::SUCCESS,
                    Err(e) => {
                        eprintln!("opensandbox-server agent: {e:#}");
                        return ExitCode::from(1);
                    }
                }
            }
            let result = runtime()
                .map_err(anyhow::Error::msg)
                .and_then(|rt| rt.block_on(agent::run(args)));
            match result {
                Ok(code) => ExitCode::from(u8::try_from(code.clamp(0, 255)).unwrap_or(1)),
                Err(e) => {
                    eprintln!("opensandbox-server agent: {e:#}");
                    ExitCode::from(1)
                }
            }
        }
        Some(Command::Images(args)) => {
            let level = std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".to_string());
            if let Err(e) = init_tracing(&level) {
                eprintln!("opensandbox-server images: {e}");
                return ExitCode::from(2);
            }
            let result = runtime()
                .map_err(anyhow::Error::msg)
                .and_then(|rt| rt.block_on(opensandbox_server::control::oci::cli::run(args)));
            match result {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("opensandbox-server images: {e:#}");
                    ExitCode::from(1)
                }
            }
        }
        None => {
            if let Err(e) = init_tracing(&cli.serve.log_level) {
                eprintln!("opensandbox-server: {e}");
                return ExitCode::from(2);
            }
            let result = runtime()
                .map_err(anyhow::Error::msg)
                .and_then(|rt| rt.block_on(control::serve(cli.serve)));
            match result {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("opensandbox-server: {e:#}");
                    ExitCode::from(1)
                }
            }
        }
    }
}
