//! `plateau apps ...`: create, list, show, deploy an image or a git
//! repository, logs (with `--follow`), env, scale, rollback, open, delete.
//! An app is named by its id or its name.

use std::collections::HashSet;
use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use super::output::{self, items};
use super::{Api, Global};

#[derive(Args)]
pub struct AppsArgs {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: AppsCommand,
}

#[derive(Subcommand)]
enum AppsCommand {
    /// List the organisation's apps.
    List,
    /// Create an app; give --image to deploy an image at once.
    Create {
        name: String,
        /// An OCI image reference: deploys it.
        #[arg(long)]
        image: Option<String>,
        /// The port the app listens on.
        #[arg(long)]
        port: Option<u16>,
        /// The project (default: the organisation's default project).
        #[arg(long)]
        project: Option<String>,
    },
    /// Show an app.
    Show { app: String },
    /// Deploy an image, or a git repository to build; for a local
    /// directory, use `plateau deploy`.
    Deploy {
        app: String,
        #[arg(long, conflicts_with = "repo")]
        image: Option<String>,
        #[arg(long)]
        repo: Option<String>,
        #[arg(long, requires = "repo")]
        branch: Option<String>,
        /// Return once the deployment is accepted, without following it.
        #[arg(long)]
        no_follow: bool,
    },
    /// Print the app's runtime logs.
    Logs {
        app: String,
        /// Keep printing new lines until interrupted.
        #[arg(long, short)]
        follow: bool,
        /// How many of the newest lines to start with (1 to 1000).
        #[arg(long, default_value_t = 200)]
        limit: u32,
    },
    /// Environment variables.
    #[command(subcommand)]
    Env(EnvCommand),
    /// Roll back to the previous deployment, or to --to DEPLOYMENT.
    Rollback {
        app: String,
        #[arg(long)]
        to: Option<String>,
    },
    /// Set the number of replicas.
    Scale { app: String, replicas: u32 },
    /// Print the app's URL and open it in a browser when there is one.
    Open { app: String },
    /// Delete an app (it can be restored for a while).
    Delete { app: String },
}

#[derive(Subcommand)]
enum EnvCommand {
    /// List the variables' names (values are never shown).
    List { app: String },
    /// Set variables: KEY=VALUE ...; the app redeploys with them.
    Set {
        app: String,
        #[arg(required = true, value_name = "KEY=VALUE")]
        pairs: Vec<String>,
    },
}

/// The id of the resource of `collection` whose id or name is `name`.
pub async fn resolve(api: &Api, collection: &str, what: &str, name: &str) -> Result<Value, String> {
    let list = api.get(collection).await?;
    items(&list)
        .into_iter()
        .find(|i| i["id"] == name || i["name"] == name)
        .ok_or_else(|| format!("no {what} named {name} in your organisation (not_found)"))
}

pub async fn run(args: AppsArgs) -> Result<(), String> {
    let api = Api::from(&args.global)?;
    let json = api.json;
    match args.command {
        AppsCommand::List => {
            let list = api.get("/apps").await?;
            output::list(json, &list, &["name", "id", "status", "replicas", "url"]);
        }
        AppsCommand::Create {
            name,
            image,
            port,
            project,
        } => {
            let mut body = json!({ "name": name });
            if let Some(image) = image {
                body["image"] = json!(image);
            }
            if let Some(port) = port {
                body["port"] = json!(port);
            }
            if let Some(project) = project {
                body["projectId"] = json!(project);
            }
            let app = api.post("/apps", body).await?;
            output::object(json, &app, &["id", "name", "status", "url"]);
        }
        AppsCommand::Show { app } => {
            let app = resolve(&api, "/apps", "app", &app).await?;
            output::object(json, &app, &[]);
        }
        AppsCommand::Deploy {
            app,
            image,
            repo,
            branch,
            no_follow,
        } => {
            let app = resolve(&api, "/apps", "app", &app).await?;
            let body = match (image, repo) {
                (Some(image), _) => json!({ "image": image }),
                (None, Some(repo)) => json!({ "repo": repo, "branch": branch }),
                (None, None) => json!({}),
            };
            let id = app["id"].as_str().unwrap_or_default();
            let deployment = api.post(&format!("/apps/{id}/deployments"), body).await?;
            if no_follow {
                output::object(json, &deployment, &["id", "status"]);
            } else {
                let last = follow_deployment(&api, id, &deployment).await?;
                finish_deployment(&api, &app, &last)?;
            }
        }
        AppsCommand::Logs { app, follow, limit } => {
            let app = resolve(&api, "/apps", "app", &app).await?;
            logs(&api, app["id"].as_str().unwrap_or_default(), follow, limit).await?;
        }
        AppsCommand::Env(EnvCommand::List { app }) => {
            let app = resolve(&api, "/apps", "app", &app).await?;
            let env = api
                .get(&format!(
                    "/apps/{}/env",
                    app["id"].as_str().unwrap_or_default()
                ))
                .await?;
            output::list(json, &env, &["key", "target", "updatedAt"]);
        }
        AppsCommand::Env(EnvCommand::Set { app, pairs }) => {
            let app = resolve(&api, "/apps", "app", &app).await?;
            let mut env = serde_json::Map::new();
            for pair in pairs {
                let (k, v) = pair
                    .split_once('=')
                    .ok_or_else(|| format!("{pair} is not KEY=VALUE (invalid_argument)"))?;
                env.insert(k.to_owned(), json!(v));
            }
            let id = app["id"].as_str().unwrap_or_default();
            let change = api
                .post(&format!("/apps/{id}/env"), json!({ "env": env }))
                .await?;
            let count = change["keys"].as_array().map_or(0, Vec::len);
            let name = app["name"].as_str().unwrap_or(id);
            output::done(json, &format!("set {count} variable(s) on {name}"), &change);
        }
        AppsCommand::Rollback { app, to } => {
            let app = resolve(&api, "/apps", "app", &app).await?;
            let id = app["id"].as_str().unwrap_or_default();
            let deployment = api
                .post(
                    &format!("/apps/{id}/rollback"),
                    json!({ "deploymentId": to }),
                )
                .await?;
            output::object(json, &deployment, &["id", "status", "cause", "image"]);
        }
        AppsCommand::Scale { app, replicas } => {
            let app = resolve(&api, "/apps", "app", &app).await?;
            let id = app["id"].as_str().unwrap_or_default();
            let scale = api
                .put(
                    &format!("/apps/{id}/scale"),
                    json!({ "replicas": replicas }),
                )
                .await?;
            output::object(json, &scale, &[]);
        }
        AppsCommand::Open { app } => {
            let app = resolve(&api, "/apps", "app", &app).await?;
            let url = app["url"].as_str().unwrap_or_default().to_owned();
            output::done(json, &url, &json!({ "url": url }));
            if !json && std::io::IsTerminal::is_terminal(&std::io::stdout()) {
                // A desktop opens it; a server without one has the line above.
                let _ = std::process::Command::new("xdg-open")
                    .arg(&url)
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn();
            }
        }
        AppsCommand::Delete { app } => {
            let app = resolve(&api, "/apps", "app", &app).await?;
            let id = app["id"].as_str().unwrap_or_default();
            let answer = api.delete(&format!("/apps/{id}")).await?;
            output::done(
                json,
                &format!("deleted {}", app["name"].as_str().unwrap_or(id)),
                &answer,
            );
        }
    }
    Ok(())
}

/// Prints runtime logs, then with `follow` the new ones every second.
async fn logs(api: &Api, id: &str, follow: bool, limit: u32) -> Result<(), String> {
    let mut since: Option<String> = None;
    // Lines at `since` itself come again (the bound is inclusive).
    let mut printed_at_since: HashSet<String> = HashSet::new();
    loop {
        let path = match &since {
            Some(s) => format!("/apps/{id}/logs?limit=1000&since={s}"),
            None => format!("/apps/{id}/logs?limit={limit}"),
        };
        let page = api.get(&path).await?;
        if api.json && !follow {
            // One answer, as the API gave it; `--follow` prints a JSON
            // line per log line instead.
            println!("{page:#}");
            return Ok(());
        }
        for line in items(&page) {
            let at = line["at"].as_str().unwrap_or_default().to_owned();
            let key = format!("{at} {} {}", line["stream"], line["line"]);
            if since.as_deref() == Some(at.as_str()) && printed_at_since.contains(&key) {
                continue;
            }
            if since.as_deref() != Some(at.as_str()) {
                printed_at_since.clear();
                since = Some(at.clone());
            }
            printed_at_since.insert(key);
            if api.json {
                println!("{line}");
            } else {
                println!("{at} {}", line["line"].as_str().unwrap_or_default());
            }
        }
        if !follow {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Prints a deployment's build log as it grows until it is live or
/// failed; the last state seen.
pub async fn follow_deployment(api: &Api, app: &str, deployment: &Value) -> Result<Value, String> {
    let id = deployment["id"].as_str().unwrap_or_default().to_owned();
    let mut shown = 0;
    let mut current = deployment.clone();
    loop {
        let log = current["buildLog"].as_str().unwrap_or_default();
        if log.len() > shown && !api.json {
            eprint!("{}", &log[shown.min(log.len())..]);
            shown = log.len();
        }
        if let Some("live" | "failed" | "superseded") = current["status"].as_str() {
            return Ok(current);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let page = api.get(&format!("/apps/{app}/deployments")).await?;
        current = items(&page)
            .into_iter()
            .find(|d| d["id"] == id.as_str())
            .ok_or_else(|| format!("deployment {id} is gone (not_found)"))?;
    }
}

/// Reports a followed deployment: its URL when live, the reason otherwise.
pub fn finish_deployment(api: &Api, app: &Value, last: &Value) -> Result<(), String> {
    match last["status"].as_str() {
        Some("live") => {
            let url = app["url"].as_str().unwrap_or_default();
            output::done(api.json, &format!("live at {url}"), last);
            Ok(())
        }
        Some(status) => Err(format!(
            "deployment {} is {status}: {} (deployment_{status})",
            last["id"].as_str().unwrap_or_default(),
            last["reason"].as_str().unwrap_or("no reason given")
        )),
        None => Err("the server answered a deployment without a status (bad_answer)".to_owned()),
    }
}
