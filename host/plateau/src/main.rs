//! `plateau`: the server and its command line.

use clap::{CommandFactory, Parser, Subcommand};
use plateau::config::{self, StoreArgs};
use plateau::{admin, agent, cli, logging, plugin_cli, serve};

#[derive(Parser)]
#[command(
    name = "plateau",
    version,
    about = "Plateau: a self-hostable, flat-rate cloud platform"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server.
    Serve(Box<serve::ServeArgs>),
    /// Run this host's data plane (supervision, failover); `serve` starts
    /// it and keeps it running. It takes the same settings as `serve`.
    Agent(Box<serve::ServeArgs>),
    /// Manage plugins on a running server (admin API).
    Plugin(plugin_cli::PluginArgs),
    /// Operator commands that work on the database directly.
    Admin {
        #[command(flatten)]
        store: StoreArgs,
        #[command(subcommand)]
        command: admin::AdminCommand,
    },
    #[command(flatten)]
    Client(cli::Command),
}

fn main() -> anyhow::Result<()> {
    plateau::runtime()?.block_on(run())
}

async fn run() -> anyhow::Result<()> {
    // TLS for the OCI client (registry pulls and pushes): ring, like the
    // rest of the binary.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => serve::run(*args).await,
        Command::Agent(args) => agent::run(*args).await,
        Command::Plugin(args) => plugin_cli::run(args).await,
        Command::Admin { store, command } => {
            logging::init(config::LogFormat::Text);
            admin::run(store, command).await
        }
        Command::Client(command) => {
            if let Err(sentence) = cli::run(command, &mut Cli::command()).await {
                eprintln!("error: {sentence}");
                std::process::exit(1);
            }
            Ok(())
        }
    }
}
