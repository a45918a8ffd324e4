//! `opensandbox-server`: the reference server, and (`agent` subcommand) the execd
//! agent that runs inside each sandbox.

fn main() {
    println!("being written");
}
