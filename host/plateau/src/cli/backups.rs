//! `plateau db backups|restore|branches`: a database's backup ledger,
//! taking a backup now, restoring into a new database (to the latest
//! archived WAL or `--to` a time), and its branches.

use clap::Subcommand;
use reqwest::Method;
use serde_json::{Map, Value, json};

use super::apps::resolve;
use super::{Api, output};

#[derive(Subcommand)]
pub enum BackupCommand {
    /// The ledger: base backups and archived WAL, oldest first.
    List { database: String },
    /// Take a base backup now (or with `--incremental`, ship the WAL
    /// since the last entry); it is `pending` until the host has taken it.
    Take {
        database: String,
        #[arg(long)]
        incremental: bool,
    },
}

#[derive(Subcommand)]
pub enum BranchCommand {
    /// The production branch (the database itself) and its branches.
    List { database: String },
    /// Make a branch: a new database copied from this one.
    Create {
        database: String,
        name: String,
        /// Copy it as it was at this time (RFC 3339); now by default.
        #[arg(long)]
        from: Option<String>,
        /// Delete it this many hours later (1 to 8760).
        #[arg(long)]
        ttl_hours: Option<u32>,
        /// The structure only: every table of the copy emptied.
        #[arg(long)]
        schema_only: bool,
        /// Refuse to delete it until unprotected.
        #[arg(long)]
        protected: bool,
    },
    /// Protect a branch from deletion, or with `--off` lift it.
    Protect {
        database: String,
        branch: String,
        #[arg(long)]
        off: bool,
    },
    /// Delete a branch (and its data).
    Delete { database: String, branch: String },
}

/// The id of database `name` (an id or a name).
async fn database(api: &Api, name: &str) -> Result<String, String> {
    let found = resolve(api, "/databases", "database", name).await?;
    Ok(found["id"].as_str().unwrap_or_default().to_owned())
}

/// A JSON object of the given fields that have a value.
fn present(pairs: Vec<(&str, Option<Value>)>) -> Value {
    let body: Map<String, Value> = pairs
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v)))
        .collect();
    Value::Object(body)
}

const LEDGER: &[&str] = &["id", "kind", "status", "sizeBytes", "startedAt", "endedAt"];
const BRANCHES: &[&str] = &[
    "name",
    "id",
    "status",
    "production",
    "protected",
    "expiresAt",
];

pub async fn backups(api: &Api, command: BackupCommand) -> Result<(), String> {
    match command {
        BackupCommand::List { database: name } => {
            let id = database(api, &name).await?;
            let ledger = api.get(&format!("/databases/{id}/backups")).await?;
            output::list(api.json, &ledger, LEDGER);
        }
        BackupCommand::Take {
            database: name,
            incremental,
        } => {
            let id = database(api, &name).await?;
            let body = json!({ "full": !incremental });
            let taken = api.post(&format!("/databases/{id}/backups"), body).await?;
            output::object(api.json, &taken, &["id", "kind", "status"]);
        }
    }
    Ok(())
}

/// Restores database `name` into a new database, `to` a time or to the
/// latest archived WAL.
pub async fn restore(
    api: &Api,
    name: &str,
    new_name: Option<String>,
    to: Option<String>,
) -> Result<(), String> {
    let id = database(api, name).await?;
    let body = present(vec![
        ("name", new_name.map(Value::from)),
        ("targetTime", to.map(Value::from)),
    ]);
    let created = api.post(&format!("/databases/{id}/restore"), body).await?;
    output::object(api.json, &created, &["id", "name", "status"]);
    Ok(())
}

pub async fn branches(api: &Api, command: BranchCommand) -> Result<(), String> {
    match command {
        BranchCommand::List { database: name } => {
            let id = database(api, &name).await?;
            let list = api.get(&format!("/databases/{id}/branches")).await?;
            output::list(api.json, &list, BRANCHES);
        }
        BranchCommand::Create {
            database: name,
            name: branch,
            from,
            ttl_hours,
            schema_only,
            protected,
        } => {
            let id = database(api, &name).await?;
            let body = present(vec![
                ("name", Some(Value::from(branch))),
                ("fromTimestamp", from.map(Value::from)),
                ("ttlHours", ttl_hours.map(Value::from)),
                ("schemaOnly", schema_only.then_some(Value::Bool(true))),
                ("protected", protected.then_some(Value::Bool(true))),
            ]);
            let created = api.post(&format!("/databases/{id}/branches"), body).await?;
            output::object(api.json, &created, &["id", "name", "status"]);
        }
        BranchCommand::Protect {
            database: name,
            branch,
            off,
        } => {
            let path = branch_path(api, &name, &branch).await?;
            let body = json!({ "protected": !off });
            let changed = api.send(Method::PATCH, &path, Some(body)).await?;
            output::object(api.json, &changed, &["id", "name", "protected"]);
        }
        BranchCommand::Delete {
            database: name,
            branch,
        } => {
            let path = branch_path(api, &name, &branch).await?;
            let answer = api.delete(&path).await?;
            output::done(api.json, &format!("deleted branch {branch}"), &answer);
        }
    }
    Ok(())
}

/// The API path of branch `branch` (an id or a name) of database `name`.
async fn branch_path(api: &Api, name: &str, branch: &str) -> Result<String, String> {
    let id = database(api, name).await?;
    let collection = format!("/databases/{id}/branches");
    let found = resolve(api, &collection, "branch", branch).await?;
    Ok(format!(
        "{collection}/{}",
        found["id"].as_str().unwrap_or_default()
    ))
}
