//! `plateau plugin ...`: manage plugins on a running server through its
//! admin API, logging in with `PLATEAU_ADMIN_PASSWORD`; `push` talks to an
//! OCI registry instead (see `plugin_push`).

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::plugin_push::{self, PushArgs, RegistryLogin};

#[derive(Args)]
pub struct PluginArgs {
    /// The server's base URL.
    #[arg(long, env = "PLATEAU_URL", default_value = "http://127.0.0.1:8080")]
    url: String,
    /// The platform operator's password (every command but push).
    #[arg(long, env = "PLATEAU_ADMIN_PASSWORD", hide_env_values = true)]
    admin_password: Option<String>,
    #[command(subcommand)]
    command: PluginCommand,
}

#[derive(Subcommand)]
pub enum PluginCommand {
    #[command(flatten)]
    Admin(AdminCommand),
    /// Package a component (.wasm) as a Wasm OCI artifact and push it.
    Push(PushArgs),
}

/// The commands that go through the server's admin API.
#[derive(Subcommand)]
pub enum AdminCommand {
    /// List plugins, the version serving, and the stored versions.
    List,
    /// Load a new version of plugin NAME from a component file (.wasm) or,
    /// with SOURCE written oci://REGISTRY/REPOSITORY:TAG (or @sha256:...),
    /// from a plugin artifact the server pulls from that registry.
    Load {
        name: String,
        source: String,
        /// Also switch to it.
        #[arg(long)]
        activate: bool,
        #[command(flatten)]
        login: RegistryLogin,
    },
    /// Switch plugin NAME to a stored version.
    Switch { name: String, digest: String },
    /// Switch plugin NAME back to its previous version.
    Rollback { name: String },
}

pub async fn run(args: PluginArgs) -> anyhow::Result<()> {
    let command = match args.command {
        PluginCommand::Push(push) => return plugin_push::run(push).await,
        PluginCommand::Admin(command) => command,
    };
    let Some(admin_password) = args.admin_password else {
        bail!("set PLATEAU_ADMIN_PASSWORD (or --admin-password) to the operator's password");
    };
    let api = format!("{}/api/v1", args.url.trim_end_matches('/'));
    let http = reqwest::Client::new();
    let login = http
        .post(format!("{api}/admin/login"))
        .json(&json!({ "password": admin_password }))
        .send()
        .await
        .with_context(|| format!("reaching {api}"))?;
    let login = check(login).await?;
    let cookie = login
        .1
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .context("the server set no session cookie")?
        .to_owned();
    let send = |req: reqwest::RequestBuilder| req.header("cookie", cookie.clone()).send();
    let (body, _) = match command {
        AdminCommand::List => check(send(http.get(format!("{api}/admin/plugins"))).await?).await?,
        AdminCommand::Load {
            name,
            source,
            activate,
            login,
        } => {
            let url = format!("{api}/admin/plugins/{name}/versions?activate={activate}");
            let request = match source.strip_prefix("oci://") {
                Some(reference) => http.post(url).json(&reference_body(reference, &login)?),
                None => http
                    .post(url)
                    .header("content-type", "application/wasm")
                    .body(read_component(&source)?),
            };
            check(send(request).await?).await?
        }
        AdminCommand::Switch { name, digest } => {
            let url = format!("{api}/admin/plugins/{name}/switch");
            check(send(http.post(url).json(&json!({ "digest": digest }))).await?).await?
        }
        AdminCommand::Rollback { name } => {
            let url = format!("{api}/admin/plugins/{name}/rollback");
            check(send(http.post(url)).await?).await?
        }
    };
    println!("{}", serde_json::to_string_pretty(&body)?);
    Ok(())
}

/// The admin API's body for loading from a registry; the server pulls.
fn reference_body(reference: &str, login: &RegistryLogin) -> anyhow::Result<Value> {
    let mut body = json!({ "reference": reference, "insecure": login.insecure });
    if let Some(password) = login.password()? {
        body["username"] = json!(login.username);
        body["password"] = json!(password);
    }
    Ok(body)
}

fn read_component(path: &str) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| {
        if std::path::Path::new(path).exists() {
            format!("reading {path}")
        } else {
            format!("reading {path} (to load from a registry, write oci://{path})")
        }
    })
}

async fn check(response: reqwest::Response) -> anyhow::Result<(Value, reqwest::header::HeaderMap)> {
    let status = response.status();
    let headers = response.headers().clone();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    if !status.is_success() {
        let detail = body["detail"].as_str().unwrap_or("no detail");
        let fields: Vec<String> = body["errors"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| {
                let text = |key: &str| e[key].as_str().unwrap_or_default().to_owned();
                format!("\n  {}: {}", text("field"), text("message"))
            })
            .collect();
        bail!("{status}: {detail}{}", fields.concat());
    }
    Ok((body, headers))
}
