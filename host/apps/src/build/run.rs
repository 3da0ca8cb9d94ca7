//! Running a build step: its own process group (killed whole when the
//! time is up), stdout and stderr merged into one capped log, and, where
//! the host has cgroups, cgroups of its own (memory, pids and CPU) that
//! hold everything the step starts, runc's containers included, and
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
    /// Limits applied where cgroups can be made.
    pub cgroup: Option<CgroupLimits>,
}

/// What a step's cgroups hold it to.
#[derive(Clone, Debug)]
pub struct CgroupLimits {
    pub memory_bytes: u64,
    pub pids: u64,
    pub cpus: u32,
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

/// Runs `cmd` within `limits`; `cgroup_name` names its cgroups.
pub async fn run(
    cmd: tokio::process::Command,
    limits: &Limits,
    cgroup_name: Option<&str>,
) -> std::io::Result<Outcome> {
    let cgroup = match (&limits.cgroup, cgroup_name) {
        (Some(limits), Some(name)) => StepCgroup::create(name, limits),
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
    // runc's containers are in sessions of their own, out of the group,
    // but in the step's cgroups.
    if let Some(cg) = &cgroup {
        cg.kill_all().await;
    }
    if timed_out {
        let _ = child.wait().await;
    }
    let _ = out.await;
    let _ = err.await;
    let success = status.is_some_and(|s| s.success());
    let oom = !success && cgroup.as_ref().is_some_and(StepCgroup::oom_killed);
    if let Some(cg) = cgroup {
        cg.remove().await;
    }
    let log = log.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Ok(Outcome {
        success,
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

/// The cgroups of a step under this process's own: one per controller
/// (cgroup v1) or one with them all (cgroup v2).
struct StepCgroup {
    dirs: Vec<PathBuf>,
    /// The one holding the memory limit (and its OOM count).
    memory: PathBuf,
    v2: bool,
}

/// A cgroup's files to write, in order.
type Settings = Vec<(&'static str, String)>;

impl StepCgroup {
    fn create(name: &str, limits: &CgroupLimits) -> Option<StepCgroup> {
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let name = format!("plateau-build-{name}");
        let period = 100_000u64;
        let quota = (period * u64::from(limits.cpus.max(1))).to_string();
        let memory = limits.memory_bytes.to_string();
        let pids = limits.pids.to_string();
        let v1 = |controller: &str| {
            own.lines().find_map(|l| {
                let mut fields = l.splitn(3, ':');
                let (_, kinds, path) = (fields.next()?, fields.next()?, fields.next()?);
                kinds.split(',').any(|k| k == controller).then(|| {
                    Path::new("/sys/fs/cgroup")
                        .join(kinds)
                        .join(path.trim_start_matches('/'))
                        .join(&name)
                })
            })
        };
        let (wanted, v2): (Vec<(PathBuf, Settings)>, bool) = if let Some(dir) = v1("memory") {
            let mut wanted = vec![(dir, vec![("memory.limit_in_bytes", memory)])];
            wanted.extend(v1("pids").map(|d| (d, vec![("pids.max", pids)])));
            wanted.extend(v1("cpu").map(|d| {
                let cpu = vec![
                    ("cpu.cfs_period_us", period.to_string()),
                    ("cpu.cfs_quota_us", quota),
                ];
                (d, cpu)
            }));
            (wanted, false)
        } else if Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
            let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
            let dir = Path::new("/sys/fs/cgroup")
                .join(path.trim_start_matches('/'))
                .join(&name);
            let settings = vec![
                ("memory.max", memory),
                ("pids.max", pids),
                ("cpu.max", format!("{quota} {period}")),
            ];
            (vec![(dir, settings)], true)
        } else {
            return None;
        };
        let mut made = StepCgroup {
            memory: wanted[0].0.clone(),
            dirs: Vec::new(),
            v2,
        };
        for (dir, settings) in wanted {
            let created = std::fs::create_dir_all(&dir);
            if created.is_ok() {
                made.dirs.push(dir.clone());
            }
            let written = created.and_then(|()| {
                settings
                    .iter()
                    .try_for_each(|(file, value)| std::fs::write(dir.join(file), value))
            });
            if let Err(e) = written {
                tracing::warn!(error = %e, dir = %dir.display(), "apps: builds run without this cgroup's limits");
                if dir == made.memory {
                    for d in made.dirs.drain(..) {
                        let _ = std::fs::remove_dir(d);
                    }
                    return None;
                }
            }
        }
        Some(made)
    }

    /// `cmd` joining these cgroups before it starts.
    fn wrap(&self, cmd: tokio::process::Command) -> tokio::process::Command {
        let std = cmd.as_std();
        let mut wrapped = tokio::process::Command::new("sh");
        wrapped
            .args([
                "-c",
                "while [ \"$1\" != -- ]; do echo $$ > \"$1\" || exit 125; shift; done; shift; exec \"$@\"",
                "sh",
            ])
            .args(self.dirs.iter().map(|d| d.join("cgroup.procs")))
            .arg("--")
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

    /// Whether the memory limit killed a process: an OOM kill counted in
    /// the cgroup (v2 counts those of its children too) or, on v1, where
    /// runc's own cgroup below counts them and is gone with it, the
    /// limit was hit.
    fn oom_killed(&self) -> bool {
        let read = |file: &str, key: &str| {
            std::fs::read_to_string(self.memory.join(file))
                .ok()
                .and_then(|t| {
                    t.lines().find_map(|l| {
                        l.strip_prefix(key)
                            .and_then(|n| n.trim().parse::<u64>().ok())
                    })
                })
                .unwrap_or(0)
        };
        if self.v2 {
            read("memory.events", "oom_kill ") > 0
        } else {
            read("memory.oom_control", "oom_kill ") > 0 || read("memory.failcnt", "") > 0
        }
    }

    /// Every process in the cgroup (and those under it), by pid.
    fn procs(dir: &Path, into: &mut Vec<String>) {
        if let Ok(text) = std::fs::read_to_string(dir.join("cgroup.procs")) {
            into.extend(text.lines().map(str::to_owned));
        }
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                Self::procs(&entry.path(), into);
            }
        }
    }

    /// Kills what is left in the step's cgroups.
    async fn kill_all(&self) {
        for _ in 0..50 {
            let mut pids = Vec::new();
            Self::procs(&self.memory, &mut pids);
            if pids.is_empty() {
                return;
            }
            let _ = tokio::process::Command::new("kill")
                .arg("-KILL")
                .args(&pids)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .await;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Removes `dir` and the cgroups under it (runc's), deepest first.
    fn remove_tree(dir: &Path) -> bool {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                Self::remove_tree(&entry.path());
            }
        }
        std::fs::remove_dir(dir).is_ok()
    }

    async fn remove(self) {
        for dir in &self.dirs {
            let mut removed = false;
            for _ in 0..50 {
                if Self::remove_tree(dir) {
                    removed = true;
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            if !removed {
                tracing::warn!(dir = %dir.display(), "apps: a build's cgroup is left behind");
            }
        }
    }
}
