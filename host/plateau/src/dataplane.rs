//! How `plateau serve` keeps this host's agent ([`crate::agent`]) running:
//! it adopts a live agent of the same binary, replaces one of another
//! binary (an upgrade), starts one when none runs, and starts it again if
//! it dies. The agent runs in its own process group, so neither a SIGKILL
//! of the API process nor a Ctrl-C in its terminal reaches it; serve leaves
//! it running when it exits.
//!
//! The agent's files, in `<data dir>/agent/`: `agent.lock` (held by the
//! live agent), `pid`, `binary` (which build of `plateau` it runs),
//! `agent.log` (what it logs), `edge` (the address its apps edge listens
//! on, written before it is ready) and `apps.sock` (the apps plane's
//! control socket).

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use plateau_kernel::{ResourceGuard, ResourceLocks};

/// The name of the agent's lock among the locks of `<data dir>/agent`.
const LOCK: &str = "agent";
/// How long a starting agent waits for a stopping one to let go.
const TAKE_WITHIN: Duration = Duration::from_secs(10);
/// How long serve waits for a started agent to be ready.
const READY_WITHIN: Duration = Duration::from_secs(60);
/// How often serve checks that its agent lives.
const WATCH_EVERY: Duration = Duration::from_secs(1);

fn dir(data_dir: &Path) -> PathBuf {
    data_dir.join("agent")
}

fn locks(data_dir: &Path) -> anyhow::Result<ResourceLocks> {
    let dir = dir(data_dir);
    ResourceLocks::new(&dir).with_context(|| format!("creating {}", dir.display()))
}

/// Which build of `plateau` this process runs: the executable's file
/// identity, which an upgrade (a new file) changes.
fn binary_identity() -> anyhow::Result<String> {
    let exe = std::env::current_exe().context("finding this executable")?;
    let meta = std::fs::metadata(&exe).with_context(|| format!("reading {}", exe.display()))?;
    Ok(format!(
        "{} {} {} {}.{}",
        exe.display(),
        meta.ino(),
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec()
    ))
}

/// For the agent: takes the agent's lock (waiting a little for an agent
/// that is stopping) and records who holds it.
pub async fn take_lock(data_dir: &Path) -> anyhow::Result<ResourceGuard> {
    let locks = locks(data_dir)?;
    let deadline = tokio::time::Instant::now() + TAKE_WITHIN;
    let guard = loop {
        if let Some(guard) = locks.try_lock(LOCK)? {
            break guard;
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "another agent runs on {}",
            data_dir.display()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let dir = dir(data_dir);
    let _ = std::fs::remove_file(dir.join("ready"));
    std::fs::write(dir.join("pid"), std::process::id().to_string())?;
    std::fs::write(dir.join("binary"), binary_identity()?)?;
    Ok(guard)
}

/// For the agent: tells serve that it runs its part.
pub fn announce_ready(data_dir: &Path) -> anyhow::Result<()> {
    std::fs::write(dir(data_dir).join("ready"), std::process::id().to_string())?;
    Ok(())
}

/// The apps plane's control socket.
pub fn apps_socket(data_dir: &Path) -> PathBuf {
    dir(data_dir).join("apps.sock")
}

/// For the agent: records the address its edge listens on.
pub fn write_edge(data_dir: &Path, addr: std::net::SocketAddr) -> anyhow::Result<()> {
    let dir = dir(data_dir);
    let partial = dir.join("edge.partial");
    std::fs::write(&partial, addr.to_string())?;
    std::fs::rename(&partial, dir.join("edge"))?;
    Ok(())
}

/// For serve, once its agent is ready: the address the agent's edge
/// listens on.
pub fn edge_address(data_dir: &Path) -> anyhow::Result<std::net::SocketAddr> {
    let file = dir(data_dir).join("edge");
    let text = std::fs::read_to_string(&file)
        .with_context(|| format!("reading the agent's edge address from {}", file.display()))?;
    text.trim()
        .parse()
        .with_context(|| format!("{} holds no address: {text:?}", file.display()))
}

/// The live agent's pid, if one holds the lock.
fn live_agent(data_dir: &Path) -> anyhow::Result<Option<i32>> {
    if locks(data_dir)?.try_lock(LOCK)?.is_some() {
        return Ok(None);
    }
    let pid = std::fs::read_to_string(dir(data_dir).join("pid")).unwrap_or_default();
    Ok(Some(pid.trim().parse().unwrap_or(0)))
}

/// The agent of this host, kept running by serve until [`Agent::detach`].
pub struct Agent {
    watcher: tokio::task::JoinHandle<()>,
}

impl Agent {
    /// Adopts, replaces or starts the agent, and watches it.
    pub async fn ensure(data_dir: &Path) -> anyhow::Result<Agent> {
        let data_dir = std::path::absolute(data_dir)?;
        match live_agent(&data_dir)? {
            Some(pid) if running_binary(&data_dir) == binary_identity()? => {
                tracing::info!(pid, "adopting the running agent");
            }
            Some(pid) => {
                tracing::info!(pid, "replacing an agent of another build");
                stop(&data_dir, pid).await?;
                start(&data_dir).await?;
            }
            None => start(&data_dir).await?,
        }
        let watcher = tokio::spawn(async move {
            loop {
                tokio::time::sleep(WATCH_EVERY).await;
                if matches!(live_agent(&data_dir), Ok(None)) {
                    tracing::warn!("the agent is not running; starting it again");
                    if let Err(e) = start(&data_dir).await {
                        tracing::error!(error = %format!("{e:#}"), "starting the agent");
                    }
                }
            }
        });
        Ok(Agent { watcher })
    }

    /// Stops watching; the agent keeps running, for the next serve.
    pub fn detach(self) {
        self.watcher.abort();
    }
}

fn running_binary(data_dir: &Path) -> String {
    std::fs::read_to_string(dir(data_dir).join("binary")).unwrap_or_default()
}

/// Asks the agent `pid` to stop (SIGTERM) and waits until it let go of
/// its lock.
async fn stop(data_dir: &Path, pid: i32) -> anyhow::Result<()> {
    if pid > 0 {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    let deadline = tokio::time::Instant::now() + READY_WITHIN;
    while live_agent(data_dir)?.is_some() {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the agent (pid {pid}) did not stop"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// Starts `plateau agent` with this process's arguments and environment,
/// in its own process group, and waits until it is ready.
async fn start(data_dir: &Path) -> anyhow::Result<()> {
    let dir = dir(data_dir);
    let _ = std::fs::remove_file(dir.join("ready"));
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("agent.log"))
        .context("opening the agent's log")?;
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let serve = args
        .iter()
        .position(|a| a == "serve")
        .context("the agent is started by `plateau serve`")?;
    args[serve] = "agent".into();
    let mut child = tokio::process::Command::new(std::env::current_exe()?)
        .args(&args)
        .env("PLATEAU_DATA_DIR", data_dir)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0)
        .spawn()
        .context("starting the agent")?;
    let pid = child.id().unwrap_or(0).to_string();
    let deadline = tokio::time::Instant::now() + READY_WITHIN;
    loop {
        if std::fs::read_to_string(dir.join("ready")).is_ok_and(|p| p.trim() == pid) {
            // Reap it if it ever ends while this process lives.
            tokio::spawn(async move {
                let _ = child.wait().await;
            });
            tracing::info!(pid, "the agent is running");
            return Ok(());
        }
        if let Some(status) = child.try_wait()? {
            anyhow::bail!(
                "the agent exited ({status}) before it was ready; its log ends: {}",
                log_tail(&dir)
            );
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the agent was not ready within {READY_WITHIN:?}; its log ends: {}",
            log_tail(&dir)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn log_tail(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("agent.log")).unwrap_or_default();
    let last: Vec<&str> = text.lines().rev().take(5).collect();
    last.into_iter().rev().collect::<Vec<_>>().join(" | ")
}
