//! Git sources: the URLs the operator allows (`PLATEAU_APPS_GIT_ALLOW`,
//! prefixes) and a shallow clone of one branch with the git CLI.

use std::path::Path;
use std::time::Duration;

use super::run::{Limits, run};

/// Whether `url` starts with one of the operator's `allowed` prefixes.
/// Without a prefix nothing is allowed; `file://` and `git://` URLs are
/// allowed only by a prefix of their own scheme. A URL climbing out of
/// its prefix (a `..` segment, an escaped dot) is never allowed.
pub fn allowed(url: &str, allowed: &[String]) -> bool {
    let url = url.trim();
    let scheme_ok = ["https://", "http://", "ssh://", "git://", "file://"]
        .iter()
        .any(|s| url.starts_with(s));
    let lowered = url.to_ascii_lowercase();
    let climbs = url.split(['/', '\\']).any(|segment| segment == "..") || lowered.contains("%2e");
    scheme_ok
        && !climbs
        && !url.contains(char::is_whitespace)
        && allowed
            .iter()
            .any(|prefix| !prefix.is_empty() && url.starts_with(prefix.as_str()))
}

/// Whether `branch` is a plain branch name git accepts.
pub fn valid_branch(branch: &str) -> bool {
    !branch.is_empty()
        && branch.len() <= 255
        && !branch.starts_with('-')
        && !branch.contains("..")
        && branch
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c))
}

/// Clones `branch` of `url` (depth 1) into `into`; the error is the
/// deployment's reason and the log.
pub async fn clone(
    url: &str,
    branch: &str,
    into: &Path,
    timeout: Duration,
) -> Result<String, (String, String)> {
    let mut cmd = tokio::process::Command::new("git");
    cmd.args(["-c", "protocol.file.allow=always", "clone", "--quiet"])
        .args(["--depth", "1", "--single-branch", "--no-tags", "--branch"])
        .arg(branch)
        .arg("--")
        .arg(url)
        .arg(into)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "true");
    let limits = Limits {
        timeout,
        cgroup: None,
    };
    let out = run(cmd, &limits, None).await.map_err(|e| {
        (
            format!("git could not run: {e}; install git"),
            String::new(),
        )
    })?;
    if out.timed_out {
        return Err((
            format!("cloning {url} took longer than {}s", timeout.as_secs()),
            out.log,
        ));
    }
    if !out.success {
        return Err((
            format!("cloning branch {branch} of {url} failed; check the URL and the branch"),
            out.log,
        ));
    }
    Ok(out.log)
}
