//! `plateau`: the server and its command line.

mod admin;
mod apps;
mod config;
mod logging;
mod plugin_cli;
mod plugin_push;
mod plugins;
mod serve;

use clap::{Parser, Subcommand};

use crate::config::StoreArgs;

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
    /// Manage plugins on a running server (admin API).
    Plugin(plugin_cli::PluginArgs),
    /// Benchmark support: time N in-process flag evaluations of the
    /// built-in flags component and of its native twin, and print the
    /// instantiation, plugin-call and native times in microseconds.
    #[cfg(feature = "bench-native")]
    #[command(hide = true)]
    BenchInprocess {
        #[arg(long, default_value_t = 5000)]
        count: u32,
        /// The flag definition (flagd JSON).
        #[arg(long)]
        flag: String,
        /// The OFREP request body.
        #[arg(long)]
        context: String,
    },
    /// Benchmark support: write the echo fixture component (a plugin whose
    /// `GET /echo/version` does nothing) to standard output.
    #[cfg(feature = "bench-native")]
    #[command(hide = true)]
    BenchEchoComponent,
    /// Operator commands that work on the database directly.
    Admin {
        #[command(flatten)]
        store: StoreArgs,
        #[command(subcommand)]
        command: admin::AdminCommand,
    },
}

/// How many tasks a runtime worker runs from its own queue before it looks
/// at the shared one (tokio tunes this itself when it is not set).
///
/// Work that finishes on other threads (a database statement on SQLite's
/// worker thread, a blocking-pool job) wakes its task through the shared
/// queue. A request holding SQLite's one writer waits there between its
/// statements, and every other writer waits for it; looking often keeps
/// that turn short under load (about a tenth more writes per second on two
/// cores, `cargo xtask bench core`).
const GLOBAL_QUEUE_INTERVAL: u32 = 4;

fn main() -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .global_queue_interval(GLOBAL_QUEUE_INTERVAL)
        .build()?
        .block_on(run())
}

async fn run() -> anyhow::Result<()> {
    // TLS for the OCI client (registry pulls and pushes): ring, like the
    // rest of the binary.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => serve::run(*args).await,
        Command::Plugin(args) => plugin_cli::run(args).await,
        #[cfg(feature = "bench-native")]
        Command::BenchInprocess {
            count,
            flag,
            context,
        } => {
            let t = plugins::in_process(count, &flag, &context).await?;
            println!("{:.2} {:.2} {:.2}", t.instantiate, t.plugin_call, t.native);
            Ok(())
        }
        #[cfg(feature = "bench-native")]
        Command::BenchEchoComponent => {
            use std::io::Write as _;
            std::io::stdout().write_all(plateau_plugin_artifacts::fixtures::ECHO)?;
            Ok(())
        }
        Command::Admin { store, command } => {
            logging::init(config::LogFormat::Text);
            admin::run(store, command).await
        }
    }
}
