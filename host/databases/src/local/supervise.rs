//! Process supervision of the local provider, all of it in one place:
//! run a tool as the servers' user, start the postmaster (`pg_ctl`),
//! pgbouncer and the write endpoint's HAProxy (they daemonize and write
//! pid files), check that they live, adopt what runs after a host
//! restart, restart what died, stop.

use std::path::Path;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::process::Command;

use crate::{Error, Result};

use super::conf::{LOG_FILE, POOLER_CONF, POOLER_PID, ROUTER_CONF, ROUTER_PID};

/// How long a started process has to accept connections.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// A command for `program` as `user` (through `runuser`) when the host
/// runs as root: PostgreSQL and pgbouncer refuse to run as root.
pub fn command(user: Option<&str>, program: &Path) -> Command {
    let mut cmd = match user {
        Some(user) => {
            let mut c = Command::new("runuser");
            c.args(["-u", user, "--"]).arg(program);
            c
        }
        None => Command::new(program),
    };
    // Its own process group: a Ctrl-C to `plateau serve` leaves the
    // clusters running, to be adopted by the next start.
    cmd.process_group(0)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    cmd
}

/// Runs `cmd` to its end; its standard output, or what it said went wrong.
pub async fn run(mut cmd: Command, what: &str) -> Result<String> {
    let out = cmd
        .output()
        .await
        .map_err(|e| Error::Unavailable(format!("cannot run {what}: {e}")))?;
    if !out.status.success() {
        return Err(Error::Unavailable(format!(
            "{what} failed: {}{}",
            String::from_utf8_lossy(&out.stderr).trim(),
            String::from_utf8_lossy(&out.stdout).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Starts the postmaster of `data` with `pg_ctl`, waiting until it accepts
/// connections.
pub async fn start_postgres(user: Option<&str>, bin: &Path, data: &Path) -> Result<()> {
    let mut cmd = command(user, &bin.join("pg_ctl"));
    cmd.arg("-D")
        .arg(data)
        .arg("-l")
        .arg(data.with_file_name(LOG_FILE))
        .args(["-w", "-t", &READY_WITHIN.as_secs().to_string(), "start"]);
    run(cmd, "pg_ctl start").await.map_err(|e| {
        let log = std::fs::read_to_string(data.with_file_name(LOG_FILE)).unwrap_or_default();
        let last: Vec<&str> = log.lines().rev().take(3).collect();
        Error::Unavailable(format!("{e}; its log ends: {}", last.join(" | ")))
    })?;
    Ok(())
}

/// The postmaster's pid, if its pid file names a live process.
pub fn postgres_pid(data: &Path) -> Option<i32> {
    let text = std::fs::read_to_string(data.join("postmaster.pid")).ok()?;
    let pid: i32 = text.lines().next()?.trim().parse().ok()?;
    alive(pid).then_some(pid)
}

/// Fences a leader: SIGKILLs its postmaster and every process working in
/// its data directory, then waits (5 s at most) until none is left. A
/// postmaster's children are session leaders of their own, and when it
/// dies they run on for a moment (a walsender may still stream, a backend
/// still commit): the fence waits for them too, dead postmaster or not.
pub async fn fence_postgres(data: &Path) {
    let Ok(data) = data.canonicalize() else {
        return;
    };
    let working_in = || -> Vec<i32> {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|d| d == data))
            .collect()
    };
    for _ in 0..100 {
        let pids = working_in();
        if pids.is_empty() {
            return;
        }
        for pid in pids {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tracing::warn!(data = %data.display(), "processes of a fenced server outlived SIGKILL for 5 s");
}

/// Starts pgbouncer on the configuration in `dir` (daemonized), waiting
/// until it accepts connections on `address:port`.
pub async fn start_pooler(
    user: Option<&str>,
    pgbouncer: &Path,
    dir: &Path,
    address: &str,
    port: u16,
) -> Result<()> {
    let mut cmd = command(user, pgbouncer);
    cmd.arg("-d").arg(dir.join(POOLER_CONF));
    run(
        cmd,
        "pgbouncer (install it with `plateau install postgres`)",
    )
    .await?;
    wait_port(address, port).await
}

/// pgbouncer's pid, if its pid file names a live process.
pub fn pooler_pid(dir: &Path) -> Option<i32> {
    let pid: i32 = std::fs::read_to_string(dir.join(POOLER_PID))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    alive(pid).then_some(pid)
}

/// Starts the write endpoint's HAProxy on the configuration in `dir`
/// (its master daemonizes), waiting until it accepts connections on
/// `address:port`.
pub async fn start_router(
    user: Option<&str>,
    haproxy: &Path,
    dir: &Path,
    address: &str,
    port: u16,
) -> Result<()> {
    let mut cmd = command(user, haproxy);
    cmd.args(["-D", "-f"]).arg(dir.join(ROUTER_CONF));
    run(cmd, "haproxy (install the haproxy package)").await?;
    wait_port(address, port).await
}

/// The write endpoint's HAProxy master's pid, if its pid file names a live
/// process.
pub fn router_pid(dir: &Path) -> Option<i32> {
    let text = std::fs::read_to_string(dir.join(ROUTER_PID)).ok()?;
    let pid: i32 = text.lines().next()?.trim().parse().ok()?;
    alive(pid).then_some(pid)
}

/// Whether `pid` runs (a zombie, which a container's init may leave
/// unreaped after a SIGKILL, does not).
fn alive(pid: i32) -> bool {
    if pid <= 0 || kill(Pid::from_raw(pid), None).is_err() {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command's closing parenthesis.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_none_or(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => true,
    }
}

/// Polls until something accepts TCP connections on `address:port`.
pub async fn wait_port(address: &str, port: u16) -> Result<()> {
    let deadline = tokio::time::Instant::now() + READY_WITHIN;
    loop {
        if tokio::net::TcpStream::connect((address, port))
            .await
            .is_ok()
        {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(Error::Unavailable(format!(
                "nothing accepts connections on {address}:{port}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Stops a process by pid: SIGTERM, then SIGKILL if it lingers.
pub async fn stop_pid(pid: i32, signal: Signal) {
    let pid = Pid::from_raw(pid);
    let _ = kill(pid, signal);
    for _ in 0..100 {
        if kill(pid, None).is_err() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = kill(pid, Signal::SIGKILL);
}
