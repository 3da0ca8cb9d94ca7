//! `plateau plugin ...`: manage plugins on a running server through its
//! admin API, logging in with `PLATEAU_ADMIN_PASSWORD`.

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use serde_json::{Value, json};

#[derive(Args)]
pub struct PluginArgs {
    /// The server's base URL.
    #[arg(long, env = "PLATEAU_URL", default_value = "http://127.0.0.1:8080")]
    url: String,
    /// The platform operator's password.
    #[arg(long, env = "PLATEAU_ADMIN_PASSWORD", hide_env_values = true)]
    admin_password: String,
    #[command(subcommand)]
    command: PluginCommand,
}

#[derive(Subcommand)]
pub enum PluginCommand {
    /// List plugins, the version serving, and the stored versions.
    List,
    /// Load a component (.wasm) as a new version of plugin NAME.
    Load {
        name: String,
        file: std::path::PathBuf,
        /// Also switch to it.
        #[arg(long)]
        activate: bool,
    },
    /// Switch plugin NAME to a stored version.
    Switch { name: String, digest: String },
    /// Switch plugin NAME back to its previous version.
    Rollback { name: String },
}

pub async fn run(args: PluginArgs) -> anyhow::Result<()> {
    let api = format!("{}/api/v1", args.url.trim_end_matches('/'));
    let http = reqwest::Client::new();
    let login = http
        .post(format!("{api}/admin/login"))
        .json(&json!({ "password": args.admin_password }))
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
    let (body, _) = match args.command {
        PluginCommand::List => check(send(http.get(format!("{api}/admin/plugins"))).await?).await?,
        PluginCommand::Load {
            name,
            file,
            activate,
        } => {
            let wasm =
                std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
            let url = format!("{api}/admin/plugins/{name}/versions?activate={activate}");
            check(
                send(
                    http.post(url)
                        .header("content-type", "application/wasm")
                        .body(wasm),
                )
                .await?,
            )
            .await?
        }
        PluginCommand::Switch { name, digest } => {
            let url = format!("{api}/admin/plugins/{name}/switch");
            check(send(http.post(url).json(&json!({ "digest": digest }))).await?).await?
        }
        PluginCommand::Rollback { name } => {
            let url = format!("{api}/admin/plugins/{name}/rollback");
            check(send(http.post(url)).await?).await?
        }
    };
    println!("{}", serde_json::to_string_pretty(&body)?);
    Ok(())
}

async fn check(response: reqwest::Response) -> anyhow::Result<(Value, reqwest::header::HeaderMap)> {
    let status = response.status();
    let headers = response.headers().clone();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    if !status.is_success() {
        let detail = body["detail"].as_str().unwrap_or("no detail");
        bail!("{status}: {detail}");
    }
    Ok((body, headers))
}
