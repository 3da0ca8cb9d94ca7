//! Process supervision of the local provider, all of it in one place:
//! start a process (it daemonizes and writes its pid file), check its
//! health (alive, and answering PING as the host's user), adopt what runs
//! after a host restart, restart what died, stop.
//!
//! A dead leader is not restarted as a leader: that could bring it back
//! empty and have the replicas copy the emptiness. It waits until the
//! sentinels have promoted a replica, then comes back as that replica's
//! replica. Only a cluster without replicas restarts its leader in place.
//! The endpoint of a cluster with replicas (`endpoint`) is supervised in
//! the same round, as a process like the others.

use std::path::Path;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::process::Command;

use crate::client::{self, Target};
use crate::spec::{ADMIN_USER, ClusterSpec, Credentials, Placement};
use crate::{Error, Result};

use super::conf::{CONF_FILE, PID_FILE};
use super::{LocalProvider, user};

/// How long a started process has to answer.
const READY_WITHIN: Duration = Duration::from_secs(10);

/// Starts `redis-server` for process `process` of the cluster (as a
/// sentinel if `sentinel`), as the cluster's user, and waits until it
/// answers as `target`.
pub async fn start(
    provider: &LocalProvider,
    placement: &Placement,
    process: &str,
    sentinel: bool,
    target: &Target<'_>,
) -> Result<()> {
    let user = provider.process_user(&placement.cluster).await?;
    // What the host wrote since the last start becomes the user's.
    user::own(&provider.cluster_dir(&placement.cluster), user.as_ref())?;
    let dir = provider.process_dir(placement, process);
    let mut cmd = Command::new(provider.bin());
    cmd.arg(dir.join(CONF_FILE));
    if sentinel {
        cmd.arg("--sentinel");
    }
    daemon(cmd, user.as_ref(), "redis-server", &dir).await?;
    wait_ready(target, READY_WITHIN).await.map_err(|e| {
        let log = std::fs::read_to_string(dir.join(super::conf::LOG_FILE)).unwrap_or_default();
        let last: Vec<&str> = log.lines().rev().take(3).collect();
        Error::Unavailable(format!("{e}; its log ends: {}", last.join(" | ")))
    })
}

/// Runs `cmd`, a server that daemonizes itself (`program`, from the
/// Debian package of that name), as `user` and in its own process group:
/// a Ctrl-C to `plateau serve` leaves the clusters running, to be adopted
/// by the next start. What it said, if it did not start in `dir`.
pub(super) async fn daemon(
    mut cmd: Command,
    user: Option<&plateau_os_user::OsUser>,
    program: &str,
    dir: &Path,
) -> Result<()> {
    if let Some(user) = user {
        // Supplementary groups are dropped with root.
        cmd.uid(user.uid).gid(user.gid);
    }
    cmd.process_group(0)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let out = cmd.output().await.map_err(|e| {
        Error::Unavailable(format!(
            "cannot run {program} ({:?}): {e}; install the {program} package",
            cmd.as_std().get_program()
        ))
    })?;
    if !out.status.success() {
        return Err(Error::Unavailable(format!(
            "{program} did not start in {}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// Polls until `target` answers PING, for at most `within`.
pub async fn wait_ready(target: &Target<'_>, within: Duration) -> Result<()> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let last = match ping(target).await {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        if tokio::time::Instant::now() >= deadline {
            return Err(Error::Unavailable(format!(
                "the cache process on port {} did not answer: {last}",
                target.port
            )));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether `target` answers PING.
pub async fn ping(target: &Target<'_>) -> Result<()> {
    let mut conn = client::connect(target).await?;
    let _: String = redis::cmd("PING").query_async(&mut conn).await?;
    Ok(())
}

/// The pid in `dir`'s pid file, if the process lives (not a zombie).
pub fn running_pid(dir: &Path) -> Option<i32> {
    live_pid(&dir.join(PID_FILE), "redis")
}

/// The pid in `pid_file`, if that process lives (not a zombie) and its
/// name starts with `comm` (a pid file left by a dead process may name
/// another process since).
pub fn live_pid(pid_file: &Path, comm: &str) -> Option<i32> {
    let pid: i32 = std::fs::read_to_string(pid_file)
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ...`: the state follows the last parenthesis.
    let state = stat.rsplit_once(')')?.1.trim_start().chars().next()?;
    let name = stat.split_once('(')?.1.rsplit_once(')')?.0;
    (state != 'Z' && name.starts_with(comm)).then_some(pid)
}

/// Stops the process of `dir`: SIGTERM, then SIGKILL after `grace`.
pub async fn stop(dir: &Path, grace: Duration) {
    stop_pid(&dir.join(PID_FILE), "redis", grace).await;
}

/// Stops the process of `pid_file` (named `comm...`): SIGTERM, then
/// SIGKILL after `grace`; removes the pid file.
pub async fn stop_pid(pid_file: &Path, comm: &str, grace: Duration) {
    let Some(pid) = live_pid(pid_file, comm) else {
        return;
    };
    let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
    let deadline = tokio::time::Instant::now() + grace;
    while live_pid(pid_file, comm).is_some() {
        if tokio::time::Instant::now() >= deadline {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = std::fs::remove_file(pid_file);
}

/// One round over a cluster: every process that runs is adopted, every
/// one that does not is started again. Whether all of them answer.
pub async fn supervise(
    provider: &LocalProvider,
    spec: &ClusterSpec,
    placement: &Placement,
    credentials: &Credentials,
) -> Result<bool> {
    provider.reserve(placement);
    if !provider.cluster_dir(&placement.cluster).exists() {
        return Err(Error::Unavailable(format!(
            "the files of cache {} are gone; restore it from a snapshot",
            spec.id
        )));
    }
    let ca = provider.ca_pem(placement)?;
    let admin = |port| Target {
        address: &placement.address,
        port,
        ca: ca.as_deref(),
        user: ADMIN_USER,
        password: &credentials.admin_password,
    };
    let leader = provider.current_leader(placement, credentials).await;
    let mut healthy = true;
    for (index, node) in placement.nodes.iter().enumerate() {
        let dir = provider.process_dir(placement, &node.name);
        if ping(&admin(node.port)).await.is_ok() {
            continue;
        }
        healthy = false;
        if running_pid(&dir).is_some() {
            // Alive but silent (loading, busy): leave it be this round.
            continue;
        }
        let follow = match &leader {
            Some((_, port)) if *port == node.port => {
                if placement.nodes.len() > 1 {
                    tracing::info!(cache = %spec.id, node = %node.name, "leader down; waiting for the sentinels to promote a replica");
                    continue;
                }
                None
            }
            Some((host, port)) => Some((host.clone(), *port)),
            None if index == 0 => None,
            None => Some((placement.address.clone(), placement.nodes[0].port)),
        };
        tracing::warn!(cache = %spec.id, node = %node.name, "restarting a cache node");
        provider.write_data_conf(spec, placement, index, follow.as_ref(), credentials, false)?;
        if let Err(e) = start(provider, placement, &node.name, false, &admin(node.port)).await {
            tracing::warn!(cache = %spec.id, node = %node.name, error = %e, "restarting a cache node");
        }
    }
    for sentinel in &placement.sentinels {
        let dir = provider.process_dir(placement, &sentinel.name);
        if ping(&admin(sentinel.port)).await.is_ok() {
            continue;
        }
        healthy = false;
        if running_pid(&dir).is_some() {
            continue;
        }
        let watch = leader
            .clone()
            .unwrap_or_else(|| (placement.address.clone(), placement.nodes[0].port));
        tracing::warn!(cache = %spec.id, sentinel = %sentinel.name, "restarting a sentinel");
        provider.write_sentinel_conf(
            spec,
            placement,
            sentinel,
            (&watch.0, watch.1),
            credentials,
        )?;
        if let Err(e) = start(
            provider,
            placement,
            &sentinel.name,
            true,
            &admin(sentinel.port),
        )
        .await
        {
            tracing::warn!(cache = %spec.id, sentinel = %sentinel.name, error = %e, "restarting a sentinel");
        }
    }
    if !super::endpoint::supervise(provider, spec, placement, credentials).await? {
        healthy = false;
    }
    if healthy {
        current_users(provider, placement, credentials).await;
    }
    Ok(healthy)
}

/// Once per host start, gives every process of an adopted cluster its ACL
/// users as this version writes them (a cluster made before the read-only
/// user existed gets it without a restart).
async fn current_users(provider: &LocalProvider, placement: &Placement, credentials: &Credentials) {
    let fresh = provider
        .acl_current
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(placement.cluster.clone());
    if !fresh {
        return;
    }
    if let Err(e) = provider.set_password(placement, credentials).await {
        tracing::warn!(cache = %placement.cluster, error = %e, "updating a cache's ACL users");
        provider
            .acl_current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&placement.cluster);
    }
}
