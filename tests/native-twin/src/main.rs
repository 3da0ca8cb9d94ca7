//! `plateau-native-twin`: what `cargo xtask bench flags` compares the
//! plugin path with, kept out of the shipped `plateau` binary (which links
//! no product plugin and carries no bench code).
//!
//! - `serve`: the plateau server, exactly as `plateau serve` runs it, with
//!   the native twins ([`flags`]) mounted beside the plugin routes;
//! - `in-process`: the flags component's per-request costs timed without
//!   HTTP or database ([`in_process`]);
//! - `echo-component`: the echo fixture's bytes, for the no-op floor.

mod flags;
mod in_process;

use std::io::Write as _;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "plateau-native-twin",
    about = "The flags plugin's native twin, for benchmarks"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the plateau server with the native twins under `/api/v1/bench`.
    Serve(Box<plateau::serve::ServeArgs>),
    /// The data plane that `serve` starts (see `plateau agent`).
    Agent(Box<plateau::serve::ServeArgs>),
    /// Time N in-process flag evaluations of the built-in flags component
    /// and of its native twin; print the instantiation, plugin-call and
    /// native times in microseconds.
    InProcess {
        #[arg(long, default_value_t = 5000)]
        count: u32,
        /// The flag definition (flagd JSON).
        #[arg(long)]
        flag: String,
        /// The OFREP request body.
        #[arg(long)]
        context: String,
    },
    /// Write the echo fixture component (a plugin whose `GET /echo/version`
    /// does nothing) to standard output.
    EchoComponent,
}

fn main() -> anyhow::Result<()> {
    plateau::runtime()?.block_on(run())
}

async fn run() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Serve(args) => plateau::serve::run_with(*args, flags::routes()).await,
        Command::Agent(args) => plateau::agent::run(*args).await,
        Command::InProcess {
            count,
            flag,
            context,
        } => {
            let t = in_process::measure(count, &flag, &context).await?;
            println!("{:.2} {:.2} {:.2}", t.instantiate, t.plugin_call, t.native);
            Ok(())
        }
        Command::EchoComponent => {
            std::io::stdout().write_all(plateau_plugin_artifacts::fixtures::ECHO)?;
            Ok(())
        }
    }
}
