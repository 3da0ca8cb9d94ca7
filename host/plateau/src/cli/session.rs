//! `plateau login` and the stored session: the server's URL and a token in
//! `$XDG_CONFIG_HOME/plateau/credentials.json` (else `~/.config/...`),
//! readable by the user alone (the file 0600, its directory 0700).

use std::io::{BufRead, IsTerminal, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::PathBuf;

use clap::Args;
use serde_json::{Value, json};

use super::{Api, Global};

/// Where an unconfigured client looks for the server.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8080";

#[derive(Args)]
pub struct LoginArgs {
    #[command(flatten)]
    pub global: Global,
}

/// What `login` stored.
#[derive(Default)]
pub struct Stored {
    pub url: Option<String>,
    pub token: Option<String>,
}

/// The credentials file.
pub fn path() -> Result<PathBuf, String> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .ok_or("set HOME or XDG_CONFIG_HOME: there is nowhere to keep the token")?;
    Ok(base.join("plateau").join("credentials.json"))
}

pub fn load() -> Stored {
    let Some(text) = path().ok().and_then(|p| std::fs::read_to_string(p).ok()) else {
        return Stored::default();
    };
    let v: Value = serde_json::from_str(&text).unwrap_or_default();
    Stored {
        url: v["url"].as_str().map(str::to_owned),
        token: v["token"].as_str().map(str::to_owned),
    }
}

fn save(url: &str, token: &str) -> Result<PathBuf, String> {
    let file = path()?;
    let dir = file.parent().expect("the file is in a directory");
    let fail = |e: std::io::Error| format!("cannot write {}: {e}", file.display());
    std::fs::create_dir_all(dir).map_err(fail)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(fail)?;
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&file)
        .map_err(fail)?;
    // A file that existed keeps its mode through `open`: set it anyway.
    out.set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(fail)?;
    let body = json!({ "url": url, "token": token });
    out.write_all(format!("{body:#}\n").as_bytes())
        .map_err(fail)?;
    Ok(file)
}

/// Reads the token from `--token`, else from standard input (a prompt on
/// a terminal), checks it against `GET /me`, and stores it.
pub async fn login(args: LoginArgs) -> Result<(), String> {
    let url = args
        .global
        .url
        .clone()
        .or(load().url)
        .unwrap_or_else(|| DEFAULT_URL.to_owned());
    let token = match args.global.token.clone() {
        Some(t) => t,
        None => {
            if std::io::stdin().is_terminal() {
                eprint!("API token for {url}: ");
                let _ = std::io::stderr().flush();
            }
            let mut line = String::new();
            std::io::stdin()
                .lock()
                .read_line(&mut line)
                .map_err(|e| format!("cannot read the token: {e}"))?;
            line.trim().to_owned()
        }
    };
    if token.is_empty() {
        return Err("no token given: pass --token or type it when asked".to_owned());
    }
    let api = Api::new(&url, &token, args.global.json);
    let me = api.get("/me").await?;
    let file = save(&url, &token)?;
    if api.json {
        println!(
            "{}",
            json!({ "url": url, "organization": me["organization"], "credentials": file })
        );
    } else {
        let org = me["organization"]["name"]
            .as_str()
            .unwrap_or("your organisation");
        println!(
            "logged in to {url} as {org}; the token is in {}",
            file.display()
        );
    }
    Ok(())
}
