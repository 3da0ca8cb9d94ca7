//! Running a build step: its own process group (killed whole when the
//! time is up), stdout and stderr merged into one capped log, and, where
//! the host has a memory cgroup controller, a memory cgroup of its own
//! whose OOM kills tell `build_oom` apart from a failed step.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};

use super::cap_log;

/// What a step may use.
#[derive(Clone, Debug)]
pub struct Limits {
    pub timeout: Duration,
    /// A memory limit, applied where a memory cgroup can be made.
    pub memory_bytes: Option<u64>,
}

/// How a step ended.
#[derive(Debug)]
pub struct Outcome {
    pub success: bool,
    pub timed_out: bool,
    /// The memory cgroup killed a process of the step.
    pub oom: bool,
    pub log: String,
}

/// Runs `cmd` within `limits`; `cgroup_name` names its memory cgroup.
pub async fn run(
    cmd: tokio::process::Command,
    limits: &Limits,
    cgroup_name: Option<&str>,
) -> std::io::Result<Outcome> {
    let cgroup = match (limits.memory_bytes, cgroup_name) {
        (Some(bytes), Some(name)) => MemoryCgroup::create(name, bytes),
        _ => None,
    };
    let mut cmd = match &cgroup {
        Some(cg) => cg.wrap(cmd),
        None => cmd,
    };
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd.spawn()?;
    let pid = child.id();
    let log = Arc::new(Mutex::new(String::new()));
    let out = tokio::spawn(collect(child.stdout.take(), log.clone()));
    let err = tokio::spawn(collect(child.stderr.take(), log.clone()));
    let (status, timed_out) = match tokio::time::timeout(limits.timeout, child.wait()).await {
        Ok(status) => (Some(status?), false),
        Err(_) => (None, true),
    };
    if let Some(pid) = pid {
        kill_group(pid).await;
    }
    if timed_out {
        let _ = child.wait().await;
    }
    let _ = out.await;
    let _ = err.await;
    let oom = cgroup.as_ref().is_some_and(MemoryCgroup::oom_killed);
    if let Some(cg) = cgroup {
        cg.remove().await;
    }
    let log = log.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Ok(Outcome {
        success: status.is_some_and(|s| s.success()),
        timed_out,
        oom,
        log: cap_log(&log),
    })
}

async fn collect(stream: Option<impl AsyncRead + Unpin>, log: Arc<Mutex<String>>) {
    let Some(mut stream) = stream else { return };
    let mut buf = vec![0u8; 8192];
    while let Ok(n) = stream.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
        log.push_str(&String::from_utf8_lossy(&buf[..n]));
        if log.len() > 4 * super::MAX_LOG_BYTES {
            let capped = cap_log(&log);
            *log = capped;
        }
    }
}

/// Kills what is left of the step's process group.
async fn kill_group(pid: u32) {
    let _ = tokio::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await;
}

/// A memory cgroup (v1 memory controller or cgroup v2) under this
/// process's own.
struct MemoryCgroup {
    dir: PathBuf,
    v2: bool,
}

impl MemoryCgroup {
    fn create(name: &str, bytes: u64) -> Option<MemoryCgroup> {
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let (parent, v2) = if let Some(path) = own
            .lines()
            .find_map(|l| l.split_once(":memory:").map(|(_, p)| p.to_owned()))
        {
            (
                Path::new("/sys/fs/cgroup/memory").join(path.trim_start_matches('/')),
                false,
            )
        } else if Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
            let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
            (
                Path::new("/sys/fs/cgroup").join(path.trim_start_matches('/')),
                true,
            )
        } else {
            return None;
        };
        let dir = parent.join(format!("plateau-build-{name}"));
        let made = std::fs::create_dir_all(&dir).and_then(|()| {
            let file = if v2 {
                "memory.max"
            } else {
                "memory.limit_in_bytes"
            };
            std::fs::write(dir.join(file), bytes.to_string())
        });
        match made {
            Ok(()) => Some(MemoryCgroup { dir, v2 }),
            Err(e) => {
                tracing::warn!(error = %e, dir = %dir.display(), "apps: builds run without a memory limit");
                let _ = std::fs::remove_dir(&dir);
                None
            }
        }
    }

    /// `cmd` joining this cgroup before it starts.
    fn wrap(&self, cmd: tokio::process::Command) -> tokio::process::Command {
        let std = cmd.as_std();
        let mut wrapped = tokio::process::Command::new("sh");
        wrapped
            .args(["-c", "echo $$ > \"$0\" && exec \"$@\""])
            .arg(self.dir.join("cgroup.procs"))
            .arg(std.get_program())
            .args(std.get_args());
        for (k, v) in std.get_envs() {
            match v {
                Some(v) => wrapped.env(k, v),
                None => wrapped.env_remove(k),
            };
        }
        if let Some(dir) = std.get_current_dir() {
            wrapped.current_dir(dir);
        }
        wrapped
    }

    fn oom_killed(&self) -> bool {
        let (file, key) = if self.v2 {
            ("memory.events", "oom_kill ")
        } else {
            ("memory.oom_control", "oom_kill ")
        };
        std::fs::read_to_string(self.dir.join(file))
            .ok()
            .and_then(|t| {
                t.lines().find_map(|l| {
                    l.strip_prefix(key)
                        .and_then(|n| n.trim().parse::<u64>().ok())
                })
            })
            .is_some_and(|n| n > 0)
    }

    async fn remove(self) {
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tracing::warn!(dir = %self.dir.display(), "apps: a build's cgroup is left behind");
    }
}
