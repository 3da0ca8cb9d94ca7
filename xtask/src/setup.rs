//! `cargo xtask run` and `cargo xtask test`: install what the project
//! needs on a fresh machine, then run the server or every test.
//!
//! Installs only what is missing: the wasm32-wasip2 Rust target (plugins
//! are built for it) and, for the tests, Debian packages (a PostgreSQL
//! server for the PostgreSQL half of the suite) and Python packages (real
//! clients the tests drive the server with).

use std::process::Command;

use anyhow::{Context, bail};

use crate::server::workspace_root;

/// Debian packages the test suite uses: a PostgreSQL server for the
/// PostgreSQL half of the suite, skopeo as an independent OCI client, and
/// Redis 7 for the managed caches (redis-cli and redis-benchmark come with
/// redis-tools).
const TEST_PACKAGES: &[&str] = &[
    "postgresql",
    "skopeo",
    "redis-server",
    "redis-sentinel",
    "redis-tools",
    // The endpoints that follow the leader: caches' and databases' writes.
    "haproxy",
    "awscli",
    "pgbouncer",
    // Linux-image apps: runc runs them, busybox-static fills the test image,
    // iproute2 makes each replica's network namespace, nftables its firewall.
    "runc",
    "busybox-static",
    "iproute2",
    "nftables",
    // Built apps: git clones their repositories, buildah builds Dockerfiles.
    "buildah",
    "git",
    // Custom domains: pebble is the ACME test CA, curl the HTTPS client
    // (HTTP/1.1 and HTTP/2) that checks the chain against its root.
    "pebble",
    "curl",
];

/// Debian packages the server itself runs: Redis 7 for the managed caches,
/// PostgreSQL 15 and pgbouncer for the managed databases, HAProxy for the
/// endpoints of both that follow the leader, runc and iproute2 for
/// Linux-image apps, buildah and git for built apps.
const RUN_PACKAGES: &[&str] = &[
    "redis-server",
    "redis-sentinel",
    "redis-tools",
    "haproxy",
    "postgresql",
    "pgbouncer",
    "runc",
    "iproute2",
    "nftables",
    "buildah",
    "git",
];

/// Python packages the test suite uses: `oras`, another OCI client, and
/// `schemathesis`, which checks the OpenAPI document against the server, and
/// `boto3`, the AWS SDK that drives the S3 endpoint.
const TEST_PYTHON_PACKAGES: &[(&str, &str)] = &[
    ("oras", "oras"),
    ("schemathesis", "schemathesis"),
    ("boto3", "boto3"),
];

pub fn run_server(extra: &[&str]) -> anyhow::Result<()> {
    ensure_wasm_target()?;
    ensure_packages(RUN_PACKAGES)?;
    crate::postgres_bins::ensure()?;
    let mut args = vec!["run", "--release", "-p", "plateau", "--", "serve"];
    args.extend_from_slice(extra);
    cargo(&args)
}

pub fn test(extra: &[&str]) -> anyhow::Result<()> {
    ensure_wasm_target()?;
    ensure_packages(TEST_PACKAGES)?;
    ensure_python_packages(TEST_PYTHON_PACKAGES)?;
    crate::postgres_bins::ensure()?;
    let mut args = vec!["test", "--workspace"];
    args.extend_from_slice(extra);
    cargo(&args)
}

fn cargo(args: &[&str]) -> anyhow::Result<()> {
    let status = Command::new(env!("CARGO"))
        .args(args)
        .current_dir(workspace_root())
        .status()
        .context("running cargo")?;
    if !status.success() {
        bail!("cargo {} failed", args.join(" "));
    }
    Ok(())
}

fn ensure_wasm_target() -> anyhow::Result<()> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .current_dir(workspace_root())
        .output()
        .context("running rustup")?;
    if String::from_utf8_lossy(&installed.stdout)
        .lines()
        .any(|l| l == "wasm32-wasip2")
    {
        return Ok(());
    }
    eprintln!("installing the wasm32-wasip2 target");
    let status = Command::new("rustup")
        .args(["target", "add", "wasm32-wasip2"])
        .current_dir(workspace_root())
        .status()?;
    if !status.success() {
        bail!("rustup target add wasm32-wasip2 failed");
    }
    Ok(())
}

fn ensure_packages(packages: &[&str]) -> anyhow::Result<()> {
    let missing: Vec<&str> = packages
        .iter()
        .copied()
        .filter(|p| {
            !Command::new("dpkg")
                .args(["-s", p])
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    eprintln!("installing Debian packages: {}", missing.join(" "));
    let sudo: &[&str] = if is_root() { &[] } else { &["sudo"] };
    let run = |args: &[&str]| -> anyhow::Result<()> {
        let mut all: Vec<&str> = sudo.to_vec();
        all.extend_from_slice(args);
        let status = Command::new(all[0])
            .args(&all[1..])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .with_context(|| format!("running {}", all.join(" ")))?;
        if !status.success() {
            bail!("{} failed", all.join(" "));
        }
        Ok(())
    };
    run(&["apt-get", "update", "-q"])?;
    let mut install = vec!["apt-get", "install", "-y", "-q", "--no-install-recommends"];
    install.extend_from_slice(&missing);
    run(&install)
}

/// `(module, package)` pairs: installs `package` with pip when `module`
/// does not import.
fn ensure_python_packages(packages: &[(&str, &str)]) -> anyhow::Result<()> {
    for (module, package) in packages {
        let present = Command::new("python3")
            .args(["-c", &format!("import {module}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if present {
            continue;
        }
        eprintln!("installing the Python package {package}");
        let status = Command::new("python3")
            .args(["-m", "pip", "install", "--quiet", package])
            .status()
            .context("running pip")?;
        if !status.success() {
            bail!("pip install {package} failed");
        }
    }
    Ok(())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}
