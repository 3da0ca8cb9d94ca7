//! `cargo xtask install postgres`: what the managed databases run
//! (PostgreSQL 15, 16 and 17, pgbouncer 1.24.1, pgvector), installed by
//! the server's own `plateau install postgres` (`host/databases/src/install.rs`),
//! so a machine with only the binary installs the same things the same way.

use anyhow::{Context, bail};

use crate::server::workspace_root;

/// Runs `plateau install postgres`, built in `release` or debug mode (the
/// build the caller runs next, so nothing is built twice).
pub fn ensure(release: bool) -> anyhow::Result<()> {
    let mut args = vec!["run", "-q", "-p", "plateau"];
    if release {
        args.insert(1, "--release");
    }
    args.extend(["--", "install", "postgres"]);
    let status = std::process::Command::new(env!("CARGO"))
        .args(&args)
        .current_dir(workspace_root())
        .status()
        .context("running cargo")?;
    if !status.success() {
        bail!("plateau install postgres failed");
    }
    Ok(())
}
