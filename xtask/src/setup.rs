//! `cargo xtask run` and `cargo xtask test`: install what the project
//! needs on a fresh machine, then run the server or every test.
//!
//! Installs only what is missing: the wasm32-wasip2 Rust target (plugins
//! are built for it) and, for the tests, Debian packages (a PostgreSQL
//! server for the PostgreSQL half of the suite) and Python packages (real
//! clients the tests drive the server with) into a virtual environment of
//! the suite's own, `target/python`: a Debian 12 whose system Python is
//! externally managed (PEP 668) refuses `pip install`, a venv never does.

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
    // rclone: a second S3 client, with its own defaults (it checks MD5s).
    "rclone",
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
    // `cargo xtask bench edge` measures the edge's HTTPS against nginx's.
    "nginx",
    // The console's browser tests: headless Chromium through WebDriver.
    "chromium",
    "chromium-driver",
    // The suite's Python clients live in a venv of their own.
    "python3-venv",
    // Log drains: a real syslog server receives RFC 5424 over TLS (GnuTLS
    // driver), with a certificate openssl makes in the test.
    "rsyslog",
    "rsyslog-gnutls",
    "openssl",
];

/// Debian packages the server itself runs: Redis 7 for the managed caches,
/// PostgreSQL 15 for the managed databases (pgbouncer is built by
/// `plateau install postgres`), HAProxy for the
/// endpoints of both that follow the leader, runc and iproute2 for
/// Linux-image apps, buildah and git for built apps.
const RUN_PACKAGES: &[&str] = &[
    "redis-server",
    "redis-sentinel",
    "redis-tools",
    "haproxy",
    "postgresql",
    "runc",
    "iproute2",
    "nftables",
    "buildah",
    "git",
];

/// Python packages the test suite uses: `oras`, another OCI client;
/// `schemathesis`, which checks the OpenAPI document against the server,
/// `openapi-spec-validator`, which checks the document itself, and
/// `openapi-python-client`, which generates a client from it; `boto3`,
/// the AWS SDK that drives the S3 endpoint; psycopg 3 and asyncpg, the
/// PostgreSQL drivers the databases' pooled URI must serve;
/// `standardwebhooks`, the Standard Webhooks reference library that
/// verifies the webhooks plugin's signatures; `sentry-sdk`, the official
/// Sentry SDK that reports errors to the error tracking plugin.
/// verifies the webhooks plugin's signatures; the OpenTelemetry SDK and
/// its OTLP/HTTP exporter, which send traces, metrics and logs to the otel
/// plugin's receiver.
const TEST_PYTHON_PACKAGES: &[(&str, &str)] = &[
    ("oras", "oras"),
    ("schemathesis", "schemathesis"),
    ("openapi_spec_validator", "openapi-spec-validator"),
    ("openapi_python_client", "openapi-python-client"),
    ("boto3", "boto3"),
    ("psycopg", "psycopg[binary]"),
    ("asyncpg", "asyncpg"),
    ("standardwebhooks", "standardwebhooks"),
    ("sentry_sdk", "sentry-sdk"),
    ("opentelemetry.sdk", "opentelemetry-sdk"),
    (
        "opentelemetry.exporter.otlp.proto.http",
        "opentelemetry-exporter-otlp-proto-http",
    ),
];

/// The Python OpenTelemetry SDK and its OTLP/HTTP exporter, which
/// `bench otel` exports with.
pub const OTEL_PYTHON_PACKAGES: &[(&str, &str)] = &[
    ("opentelemetry.sdk", "opentelemetry-sdk"),
    (
        "opentelemetry.exporter.otlp.proto.http",
        "opentelemetry-exporter-otlp-proto-http",
    ),
];

/// npm packages the test suite uses, installed under `target/npm-clients`
/// (the tests set `NODE_PATH` to its `node_modules`): node-postgres, and
/// axe-core, which the console's browser tests inject into every page
/// (the version is the tests' `AXE_VERSION`); `@sentry/node`, the official
/// Sentry SDK the error tracking test reports with.
const TEST_NPM_PACKAGES: &[&str] = &["pg", "axe-core@4.10.3", "@sentry/node"];

pub fn run_server(extra: &[&str]) -> anyhow::Result<()> {
    ensure_wasm_target()?;
    ensure_packages(RUN_PACKAGES)?;
    crate::postgres_bins::ensure(true)?;
    let mut args = vec!["run", "--release", "-p", "plateau", "--", "serve"];
    args.extend_from_slice(extra);
    cargo(&args)
}

pub fn test(extra: &[&str]) -> anyhow::Result<()> {
    ensure_wasm_target()?;
    ensure_packages(TEST_PACKAGES)?;
    let venv_bin = ensure_python_packages(TEST_PYTHON_PACKAGES)?;
    ensure_npm_packages(TEST_NPM_PACKAGES)?;
    crate::postgres_bins::ensure(false)?;
    let mut args = vec!["test", "--workspace"];
    args.extend_from_slice(extra);
    // The tests run `python3`: the venv's, which sees its packages.
    let path = std::env::join_paths(std::iter::once(venv_bin).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))?;
    cargo_with(&args, &[("PATH", path)])
}

fn cargo(args: &[&str]) -> anyhow::Result<()> {
    cargo_with(args, &[])
}

fn cargo_with(args: &[&str], env: &[(&str, std::ffi::OsString)]) -> anyhow::Result<()> {
    let status = Command::new(env!("CARGO"))
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
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

/// `(module, package)` pairs: installs `package` with the venv's pip when
/// `module` does not import there; the venv's `bin` directory. The venv
/// sees the system's packages (`--system-site-packages`), so a machine
/// that has them installs nothing.
pub fn ensure_python_packages(packages: &[(&str, &str)]) -> anyhow::Result<std::path::PathBuf> {
    let venv = workspace_root().join("target/python");
    let bin = venv.join("bin");
    let python = bin.join("python3");
    if !python.exists() {
        eprintln!(
            "creating the test suite's Python environment in {}",
            venv.display()
        );
        let status = Command::new("python3")
            .args(["-m", "venv", "--system-site-packages"])
            .arg(&venv)
            .status()
            .context("running python3 -m venv")?;
        if !status.success() {
            bail!(
                "python3 -m venv {} failed (is python3-venv installed?)",
                venv.display()
            );
        }
    }
    for (module, package) in packages {
        let present = Command::new(&python)
            .args(["-c", &format!("import {module}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if present {
            continue;
        }
        eprintln!("installing the Python package {package}");
        let status = Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", package])
            .status()
            .context("running pip")?;
        if !status.success() {
            bail!("pip install {package} failed");
        }
    }
    Ok(bin)
}

/// Installs `packages` into `target/npm-clients` when one is missing.
fn ensure_npm_packages(packages: &[&str]) -> anyhow::Result<()> {
    let dir = workspace_root().join("target/npm-clients");
    let missing: Vec<&str> = packages
        .iter()
        .copied()
        .filter(|p| {
            let name = p
                .rsplit_once('@')
                .filter(|(n, _)| !n.is_empty())
                .map_or(*p, |(n, _)| n);
            !dir.join("node_modules")
                .join(name)
                .join("package.json")
                .exists()
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    // All of them in one install: without a package.json, npm removes
    // what an earlier `--no-save` install put there.
    eprintln!("installing the npm packages {}", packages.join(" "));
    std::fs::create_dir_all(&dir)?;
    let status = Command::new("npm")
        .args(["install", "--silent", "--no-save", "--prefix"])
        .arg(&dir)
        .args(packages)
        .status()
        .context("running npm (install Node.js and npm)")?;
    if !status.success() {
        bail!("npm install {} failed", packages.join(" "));
    }
    Ok(())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}
