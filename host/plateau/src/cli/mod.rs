//! The user's command line: `plateau login`, `apps`, `deploy`, `db`,
//! `cache`, `members`, `storage`, `queues`, `cron`, `workflows` and `completions`.
//! Each is a client of the public API only, with a token from `login` (or
//! `--token`, `PLATEAU_TOKEN`), `--json` for scripts, and errors as one
//! sentence naming the problem's code.
//!
//! The settings every command takes ([`Global`]) are `global`, so they are
//! accepted before or after the subcommand (`plateau apps list --json`).

mod api;
mod apps;
mod backups;
mod deploy;
mod members;
mod output;
mod plugins;
mod services;
mod session;
mod storage;

use clap::{Args, Subcommand};

pub use api::Api;

/// What every client command takes.
#[derive(Args, Clone, Debug)]
pub struct Global {
    /// The server's base URL (default: the one `login` stored, else
    /// http://127.0.0.1:8080).
    #[arg(long, env = "PLATEAU_URL", global = true)]
    pub url: Option<String>,
    /// An API token (default: the one `login` stored).
    #[arg(long, env = "PLATEAU_TOKEN", hide_env_values = true, global = true)]
    pub token: Option<String>,
    /// Print the API's JSON answer instead of text, for scripts.
    #[arg(long, global = true)]
    pub json: bool,
}

/// The client commands, flattened into the binary's top level.
#[derive(Subcommand)]
pub enum Command {
    /// Store a token for this server in your config directory (mode 0600).
    Login(session::LoginArgs),
    /// Apps: create, deploy, logs, env, scale, rollback, open.
    Apps(apps::AppsArgs),
    /// Deploy a local directory to an app: pack, upload, follow the build.
    Deploy(deploy::DeployArgs),
    /// Managed PostgreSQL databases: create, connect, backups, restore,
    /// branches.
    #[command(name = "db")]
    Db(services::DbArgs),
    /// Managed Redis caches.
    Cache(services::CacheArgs),
    /// Members and invitations: list, invite, accept, role, remove.
    Members(members::MembersArgs),
    /// Object storage: buckets, keys, and the AWS_* settings of a client.
    Storage(storage::StorageArgs),
    /// Queues: list, create, send, receive.
    Queues(plugins::QueuesArgs),
    /// Cron jobs: list, create, delete, trigger.
    Cron(plugins::CronArgs),
    /// Workflow runs: list, start, show.
    Workflows(plugins::WorkflowsArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions { shell: clap_complete::Shell },
}

/// Runs a client command; `Err` is the one sentence to print.
pub async fn run(command: Command, cli: &mut clap::Command) -> Result<(), String> {
    match command {
        Command::Login(args) => session::login(args).await,
        Command::Apps(args) => apps::run(args).await,
        Command::Deploy(args) => deploy::run(args).await,
        Command::Db(args) => services::db(args).await,
        Command::Cache(args) => services::cache(args).await,
        Command::Members(args) => members::run(args).await,
        Command::Storage(args) => storage::run(args).await,
        Command::Queues(args) => plugins::queues(args).await,
        Command::Cron(args) => plugins::cron(args).await,
        Command::Workflows(args) => plugins::workflows(args).await,
        Command::Completions { shell } => {
            let name = cli.get_name().to_owned();
            clap_complete::generate(shell, cli, name, &mut std::io::stdout());
            Ok(())
        }
    }
}
