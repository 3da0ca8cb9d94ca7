//! `plateau db ...` and `plateau cache ...`: list, create, show, delete,
//! and `connect`, which runs the real client (`psql`, `redis-cli`) with
//! the connection the API gives, a TLS cache's CA certificate included.

use std::os::unix::process::CommandExt as _;
use std::process::Command;

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use super::apps::resolve;
use super::{Api, Global, output};

#[derive(Args)]
pub struct DbArgs {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: ServiceCommand,
}

#[derive(Args)]
pub struct CacheArgs {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: ServiceCommand,
}

#[derive(Subcommand)]
enum ServiceCommand {
    /// List them.
    List,
    /// Create one (it starts in the background: `show` tells when it runs).
    Create {
        name: String,
        /// Memory in MiB (default: the plan's).
        #[arg(long)]
        memory_mb: Option<u32>,
        /// Replicas besides the leader (databases: standbys).
        #[arg(long)]
        replicas: Option<u32>,
        /// Caches only: plain TCP instead of TLS (TLS is the default; the
        /// connection gives its CA).
        #[arg(long)]
        no_tls: bool,
    },
    /// Show one, by id or name.
    Show { name: String },
    /// Print its connection (URI, user, password; a cache's CA).
    Connection { name: String },
    /// Open the real client on it: psql for a database, redis-cli for a
    /// cache; arguments after `--` go to the client.
    Connect {
        name: String,
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// Delete one.
    Delete { name: String },
}

pub async fn db(args: DbArgs) -> Result<(), String> {
    run(args.global, args.command, Kind::Database).await
}

pub async fn cache(args: CacheArgs) -> Result<(), String> {
    run(args.global, args.command, Kind::Cache).await
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Database,
    Cache,
}

impl Kind {
    fn collection(self) -> &'static str {
        match self {
            Kind::Database => "/databases",
            Kind::Cache => "/caches",
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Kind::Database => "database",
            Kind::Cache => "cache",
        }
    }
}

async fn run(global: Global, command: ServiceCommand, kind: Kind) -> Result<(), String> {
    let api = Api::from(&global)?;
    let json = api.json;
    let collection = kind.collection();
    match command {
        ServiceCommand::List => {
            let list = api.get(collection).await?;
            output::list(
                json,
                &list,
                &["name", "id", "status", "memoryMb", "replicas"],
            );
        }
        ServiceCommand::Create {
            name,
            memory_mb,
            replicas,
            no_tls,
        } => {
            let mut body = json!({ "name": name });
            if let Some(m) = memory_mb {
                body["memoryMb"] = json!(m);
            }
            if let Some(r) = replicas {
                body["replicas"] = json!(r);
            }
            if no_tls {
                if kind == Kind::Database {
                    return Err("--no-tls is for caches (invalid_argument)".to_owned());
                }
                body["tls"] = json!(false);
            }
            let created = api.post(collection, body).await?;
            output::object(json, &created, &["id", "name", "status"]);
        }
        ServiceCommand::Show { name } => {
            let found = resolve(&api, collection, kind.noun(), &name).await?;
            output::object(json, &found, &[]);
        }
        ServiceCommand::Connection { name } => {
            let connection = connection(&api, kind, &name).await?;
            output::object(
                json,
                &connection,
                &["uri", "host", "port", "username", "password"],
            );
        }
        ServiceCommand::Connect { name, args } => {
            let connection = connection(&api, kind, &name).await?;
            return Err(exec(kind, &connection, &args));
        }
        ServiceCommand::Delete { name } => {
            let found = resolve(&api, collection, kind.noun(), &name).await?;
            let id = found["id"].as_str().unwrap_or_default();
            let answer = api.delete(&format!("{collection}/{id}")).await?;
            output::done(
                json,
                &format!("deleted {}", found["name"].as_str().unwrap_or(id)),
                &answer,
            );
        }
    }
    Ok(())
}

async fn connection(api: &Api, kind: Kind, name: &str) -> Result<Value, String> {
    let found = resolve(api, kind.collection(), kind.noun(), name).await?;
    let id = found["id"].as_str().unwrap_or_default();
    api.get(&format!("{}/{id}/connection", kind.collection()))
        .await
}

/// Replaces this process with the client; returns only the sentence of
/// why it could not.
fn exec(kind: Kind, connection: &Value, extra: &[String]) -> String {
    let uri = connection["uri"].as_str().unwrap_or_default();
    let (program, package) = match kind {
        Kind::Database => ("psql", "postgresql-client"),
        Kind::Cache => ("redis-cli", "redis-tools"),
    };
    let mut command = Command::new(program);
    match kind {
        Kind::Database => {
            command.arg(uri);
        }
        Kind::Cache => {
            // The password goes through the environment, not the command
            // line others can read; `--no-auth-warning` stays quiet.
            command
                .env(
                    "REDISCLI_AUTH",
                    connection["password"].as_str().unwrap_or_default(),
                )
                .args(["-h", connection["host"].as_str().unwrap_or("127.0.0.1")])
                .args(["-p", &connection["port"].to_string()]);
            if let Some(user) = connection["username"]
                .as_str()
                .filter(|u| !u.is_empty() && *u != "default")
            {
                command.args(["--user", user]);
            }
            if connection["tls"] == true {
                command.arg("--tls");
                if let Some(ca) = connection["caCertificate"].as_str() {
                    match write_ca(ca) {
                        Ok(path) => {
                            command.arg("--cacert").arg(path);
                        }
                        Err(e) => return e,
                    }
                }
            }
        }
    }
    command.args(extra);
    let e = command.exec();
    if e.kind() == std::io::ErrorKind::NotFound {
        format!(
            "{program} is not installed: install it (Debian: apt-get install {package}) (client_missing)"
        )
    } else {
        format!("cannot run {program}: {e} (client_failed)")
    }
}

/// The cache's CA certificate in a file of the user's (beside the
/// credentials), for `--cacert`.
fn write_ca(pem: &str) -> Result<std::path::PathBuf, String> {
    let fail =
        |e: std::io::Error| format!("cannot write the cache's CA certificate: {e} (io_error)");
    let file = super::session::path()?;
    let dir = file.parent().expect("the file is in a directory");
    std::fs::create_dir_all(dir).map_err(fail)?;
    let path = dir.join("cache-ca.pem");
    std::fs::write(&path, pem).map_err(fail)?;
    Ok(path)
}
