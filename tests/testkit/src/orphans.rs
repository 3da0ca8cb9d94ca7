//! The processes a server starts under its data directory (its agent, cache and
//! database servers, containers, apps' runc containers) outlive `plateau
//! serve` by design: a restarted host adopts them. A test's server takes them down with it, so
//! a test that forgets a resource leaves nothing running, nor mounted.

use std::path::Path;

/// SIGKILLs every process whose working directory lies under `dir` or whose
/// command line names a path under it.
pub fn kill_under(dir: &Path) {
    stop_containers(dir);
    let Some(needle) = dir.to_str() else { return };
    let me = std::process::id().to_string();
    // The host's agent first: it would start again what it supervises.
    let agent = std::fs::read_to_string(dir.join("agent/pid")).unwrap_or_default();
    let agent = agent.trim().to_owned();
    let mut pids: Vec<String> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|pid| pid.bytes().all(|b| b.is_ascii_digit()) && *pid != me)
        .filter(|pid| {
            let cwd = std::fs::read_link(format!("/proc/{pid}/cwd"));
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            cwd.is_ok_and(|cwd| cwd.starts_with(dir))
                || String::from_utf8_lossy(&cmdline).contains(needle)
        })
        .collect();
    if agent.bytes().all(|b| b.is_ascii_digit()) && !agent.is_empty() && agent != me {
        pids.retain(|pid| *pid != agent);
        pids.insert(0, agent);
    }
    if !pids.is_empty() {
        let _ = std::process::Command::new("kill")
            .arg("-KILL")
            .args(&pids)
            .status();
    }
    unmount_under(dir);
}

/// Unmounts the filesystems mounted under `dir` (apps' volumes, whose
/// loop devices are few), deepest first; lazily, as a killed replica may
/// still hold one for a moment.
fn unmount_under(dir: &Path) {
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut points: Vec<&str> = table
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|p| Path::new(p).starts_with(dir))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for p in points {
        let _ = std::process::Command::new("umount")
            .args(["--lazy", p])
            .output();
    }
}

/// Deletes the apps' runc containers under `dir` (their processes live in
/// their own namespaces, out of sight of [`kill_under`]) and the network
/// namespaces their bundles name.
fn stop_containers(dir: &Path) {
    let root = dir.join("apps/containers");
    let state = root.join("state");
    if !state.is_dir() {
        return;
    }
    let listed = std::process::Command::new("runc")
        .arg("--root")
        .arg(&state)
        .args(["list", "--quiet"])
        .output();
    for id in listed
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.is_empty())
    {
        let _ = std::process::Command::new("runc")
            .arg("--root")
            .arg(&state)
            .args(["delete", "--force", id])
            .output();
    }
    for bundle in std::fs::read_dir(root.join("bundles"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let Ok(text) = std::fs::read(bundle.path().join("config.json")) else {
            continue;
        };
        let config: serde_json::Value = serde_json::from_slice(&text).unwrap_or_default();
        for ns in config["linux"]["namespaces"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Some(name) = ns["path"]
                .as_str()
                .and_then(|p| p.strip_prefix("/run/netns/"))
            {
                let _ = std::process::Command::new("ip")
                    .args(["netns", "delete", name])
                    .output();
            }
        }
    }
}
