//! The processes a server starts under its data directory (cache and
//! database servers, containers) outlive `plateau serve` by design: a
//! restarted host adopts them. A test's server takes them down with it, so
//! a test that forgets a resource leaves nothing running.

use std::path::Path;

/// SIGKILLs every process whose working directory lies under `dir` or whose
/// command line names a path under it.
pub(crate) fn kill_under(dir: &Path) {
    let Some(needle) = dir.to_str() else { return };
    let me = std::process::id().to_string();
    let pids: Vec<String> = std::fs::read_dir("/proc")
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
    if !pids.is_empty() {
        let _ = std::process::Command::new("kill")
            .arg("-KILL")
            .args(&pids)
            .status();
    }
}
