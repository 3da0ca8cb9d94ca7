//! Builds and starts the release `plateau` binary (or the bench's
//! `plateau-native-twin`, the same server with native twins of plugin
//! routes) on a fresh data directory, for benchmarks.

use std::process::Stdio;

use anyhow::{Context, bail};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub struct Server {
    child: Child,
    dir: tempfile::TempDir,
    pub base: String,
    /// The apps edge, `http://127.0.0.1:PORT`.
    pub edge: String,
    pub token: String,
}

/// The bootstrap token of benchmark servers: fixed, so runs are alike.
const TOKEN: &str = "plt_BenchBenchBenchBenchBenchBenchBenchBench";
/// The operator password of benchmark servers, for the admin API.
pub const ADMIN_PASSWORD: &str = "bench-admin-password";

/// A bench's server takes down what it started under its data directory
/// (apps' runc containers, database and cache servers), which by design
/// outlive `plateau serve`.
impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        plateau_testkit::kill_under(self.dir.path());
    }
}

impl Server {
    /// The server's data directory.
    pub fn data_dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    pub async fn start_release() -> anyhow::Result<Server> {
        Self::start_release_with(&[]).await
    }

    /// [`Server::start_release`] with extra environment variables.
    pub async fn start_release_with(env: &[(&str, &str)]) -> anyhow::Result<Server> {
        build_release(&["plateau"]).await?;
        Self::spawn(&release_binary(), env).await
    }

    /// The server of `plateau-native-twin serve`: `plateau serve` with the
    /// native twins under `/api/v1/bench`. [`Server::command`] still runs
    /// the `plateau` binary, built beside it.
    pub async fn start_native_twin() -> anyhow::Result<Server> {
        build_release(&["plateau", NATIVE_TWIN]).await?;
        Self::spawn(&release_dir().join(NATIVE_TWIN), &[]).await
    }

    async fn spawn(bin: &std::path::Path, env: &[(&str, &str)]) -> anyhow::Result<Server> {
        let dir = tempfile::tempdir()?;
        let mut child = Command::new(bin)
            .arg("serve")
            .env("PLATEAU_LISTEN", "127.0.0.1:0")
            .env("PLATEAU_EDGE_LISTEN", "127.0.0.1:0")
            .env("PLATEAU_STORAGE_LISTEN", "127.0.0.1:0")
            .env("PLATEAU_DATA_DIR", dir.path())
            .env("PLATEAU_BOOTSTRAP_TOKEN", TOKEN)
            .env("PLATEAU_LOG", "error")
            .env("PLATEAU_ADMIN_PASSWORD", ADMIN_PASSWORD)
            .envs(env.iter().copied())
            .env_remove("PLATEAU_DATABASE_URL")
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let mut lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
        let mut base = None;
        let mut edge = String::new();
        while let Some(line) = lines.next_line().await? {
            if let Some(url) = line.strip_prefix("edge listening on ") {
                edge = url.to_owned();
            }
            if let Some(url) = line.strip_prefix("listening on ") {
                base = Some(url.to_owned());
                break;
            }
        }
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Server {
            child,
            dir,
            base: base.context("plateau exited before listening")?,
            edge,
            token: TOKEN.to_owned(),
        })
    }
}

impl Server {
    /// The server process's CPU time so far (user and system), where
    /// `/proc` tells it.
    pub fn cpu_time(&self) -> Option<std::time::Duration> {
        crate::load::cpu_time(self.pid()?)
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// The pid of the server's agent (`plateau agent`, which runs the apps
    /// edge and the replicas), as it wrote it in `<data dir>/agent/pid`.
    pub fn agent_pid(&self) -> Option<u32> {
        std::fs::read_to_string(self.dir.path().join("agent/pid"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// A new organisation on `plan` made with `plateau admin create-org`;
    /// its owner token.
    pub async fn create_org(&self, name: &str, plan: &str) -> anyhow::Result<String> {
        let out = self
            .command(&["admin", "create-org", name, "--plan", plan])
            .await?;
        String::from_utf8_lossy(&out)
            .lines()
            .find_map(|l| l.strip_prefix("owner token (shown once): "))
            .map(str::to_owned)
            .context("create-org printed no owner token")
    }

    /// Runs `plateau ARGS` (the release binary) on this server's store and
    /// against its admin API, as an operator would; its standard output.
    pub async fn command(&self, args: &[&str]) -> anyhow::Result<Vec<u8>> {
        let output = Command::new(release_binary())
            .args(args)
            .env("PLATEAU_DATA_DIR", self.dir.path())
            .env("PLATEAU_URL", &self.base)
            .env("PLATEAU_ADMIN_PASSWORD", ADMIN_PASSWORD)
            .env("PLATEAU_LOG", "error")
            .env_remove("PLATEAU_DATABASE_URL")
            .output()
            .await
            .context("running plateau")?;
        if !output.status.success() {
            bail!(
                "plateau {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Ok(output.stdout)
    }
}

pub fn workspace_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace root")
        .to_path_buf()
}

/// The bench's server binary with the native twins (`tests/native-twin`).
pub const NATIVE_TWIN: &str = "plateau-native-twin";

/// Whether `BENCH_PROFILE=debug` asks for the debug build instead of the
/// release one: a quick run that checks a bench works, whose figures are
/// not the product's.
pub fn debug_profile() -> bool {
    std::env::var("BENCH_PROFILE").is_ok_and(|p| p == "debug")
}

/// Builds the release binaries of `packages` (each package's binary has
/// its name) in one cargo run (the debug ones under `BENCH_PROFILE=debug`).
/// `BENCH_BUILD=skip` runs the binaries already built (for example the
/// test suite's debug `plateau` under `BENCH_PROFILE=debug`).
async fn build_release(packages: &[&str]) -> anyhow::Result<()> {
    if std::env::var("BENCH_BUILD").is_ok_and(|b| b == "skip") {
        eprintln!("BENCH_BUILD=skip: running the binaries already built");
        return Ok(());
    }
    let mut args = vec!["build", "--quiet"];
    if !debug_profile() {
        args.push("--release");
    } else {
        eprintln!("BENCH_PROFILE=debug: the debug build runs; its figures are not the product's");
    }
    for package in packages {
        args.extend(["-p", package]);
    }
    let status = Command::new(env!("CARGO"))
        .args(&args)
        .status()
        .await
        .context("running cargo build")?;
    if !status.success() {
        bail!("cargo {} failed", args.join(" "));
    }
    Ok(())
}

/// The release directory of this workspace's target directory.
pub fn release_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
        .join(if debug_profile() { "debug" } else { "release" })
}

/// The release `plateau` binary of this workspace's target directory.
pub fn release_binary() -> std::path::PathBuf {
    release_dir().join("plateau")
}
