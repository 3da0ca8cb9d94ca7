//! Builds and starts the release `plateau` binary on a fresh data
//! directory, for benchmarks.

use std::process::Stdio;

use anyhow::{Context, bail};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub struct Server {
    _child: Child,
    _dir: tempfile::TempDir,
    pub base: String,
    pub token: String,
}

/// The bootstrap token of benchmark servers: fixed, so runs are alike.
const TOKEN: &str = "plt_BenchBenchBenchBenchBenchBenchBenchBench";

impl Server {
    pub async fn start_release(features: &[&str]) -> anyhow::Result<Server> {
        let mut args = vec!["build", "--release", "--quiet", "-p", "plateau"];
        let features = features.join(",");
        if !features.is_empty() {
            args.extend(["--features", &features]);
        }
        let status = Command::new(env!("CARGO"))
            .args(&args)
            .status()
            .await
            .context("running cargo build")?;
        if !status.success() {
            bail!("cargo build --release -p plateau failed");
        }
        let bin = release_binary();
        let dir = tempfile::tempdir()?;
        let mut child = Command::new(bin)
            .arg("serve")
            .env("PLATEAU_LISTEN", "127.0.0.1:0")
            .env("PLATEAU_DATA_DIR", dir.path())
            .env("PLATEAU_BOOTSTRAP_TOKEN", TOKEN)
            .env("PLATEAU_LOG", "error")
            .env_remove("PLATEAU_DATABASE_URL")
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .context("starting plateau")?;
        let mut lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
        let mut base = None;
        while let Some(line) = lines.next_line().await? {
            if let Some(url) = line.strip_prefix("listening on ") {
                base = Some(url.to_owned());
                break;
            }
        }
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Server {
            _child: child,
            _dir: dir,
            base: base.context("plateau exited before listening")?,
            token: TOKEN.to_owned(),
        })
    }
}

pub fn workspace_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace root")
        .to_path_buf()
}

/// The release `plateau` binary of this workspace's target directory.
pub fn release_binary() -> std::path::PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
        .join("release/plateau")
}
