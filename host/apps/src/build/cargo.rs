//! Rust crates for `wasm32-wasip2`: a source with a `Cargo.toml` and no
//! `Dockerfile` is built with cargo (offline, against the host's crate
//! cache, in a fresh target directory) into a `wasi:http`
//! component, pushed to the organisation's repository as a Wasm OCI
//! artifact (the layout plugins use).
//!
//! Cargo runs the crate's build scripts and procedural macros: it runs
//! in a working container of its own, in [`super::sandbox`] with no
//! capability at all, over an empty root where the host's `/usr` (and
//! its merged `/bin`, `/lib`), the toolchain and the crate cache are
//! mounted read-only and only a copy of the source, the target directory
//! and a `CARGO_HOME` of the build's work directory are writable.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use plateau_plugin_host::oci::artifact::{
    self, CONFIG_MEDIA_TYPE, LAYER_MEDIA_TYPE, MANIFEST_MEDIA_TYPE, WasmConfig,
};
use sha2::{Digest, Sha256};

use super::local::LocalBuilder;
use super::run::{Limits, run};
use super::{BuildFailure, BuildJob, Built, cap_log, sandbox};

const TARGET: &str = "wasm32-wasip2";

/// Host directories a crate's build reads, where this host has them.
const SYSTEM: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib64",
    "/etc/alternatives",
    "/etc/ld.so.cache",
];

impl LocalBuilder {
    pub(super) async fn cargo(&self, job: &BuildJob) -> Result<Built, BuildFailure> {
        let started = Instant::now();
        let failed = |m: String| BuildFailure::new("build_failed", m, String::new());
        let runtime = sandbox::install_runtime(self.dir()).map_err(failed)?;
        let toolchain = sysroot(self.dir()).await.map_err(failed)?;
        let work = sandbox::work_dir(&job.id).map_err(failed)?;
        let built = self
            .cargo_in(job, started, &runtime, &toolchain, &work)
            .await;
        let _ = std::fs::remove_dir_all(&work);
        built
    }

    /// Builds `job` in a working container over `work`'s directories
    /// and pushes what it made.
    async fn cargo_in(
        &self,
        job: &BuildJob,
        started: Instant,
        runtime: &Path,
        toolchain: &Path,
        work: &Path,
    ) -> Result<Built, BuildFailure> {
        let (home, target_dir, source) = (
            work.join("cargo-home"),
            work.join("target"),
            work.join("src"),
        );
        prepare(&self.tmp(job), &home, &target_dir)
            .and_then(|()| sandbox::copy_in(&job.source, &source))
            .map_err(|e| {
                let message = format!("the build directories cannot be made: {e}");
                BuildFailure::new("build_failed", message, String::new())
            })?;
        let name = format!("cargo-{}", job.id);
        let mut from = self.buildah(job);
        from.arg("from")
            .args(sandbox::from_args(&[]))
            .args(["--name", name.as_str(), "scratch"]);
        let mut made = self.step(from, job, started, "cargo").await;
        if made.is_ok() {
            let mut cmd = self.buildah(job);
            cmd.arg("run").args(sandbox::run_args(runtime));
            cmd.args(mounts(toolchain, &home, &target_dir, &source));
            cmd.args(["--mount", "type=tmpfs,destination=/tmp"]);
            for env in [
                "CARGO_HOME=/cargo",
                "CARGO_TARGET_DIR=/target",
                "CARGO_TERM_COLOR=never",
                "RUSTC=/toolchain/bin/rustc",
                "PATH=/toolchain/bin:/usr/bin:/bin",
                "HOME=/tmp",
            ] {
                cmd.args(["-e", env]);
            }
            cmd.args(["--workingdir", "/src", name.as_str(), "--"])
                .args(["/toolchain/bin/cargo", "build", "--release", "--offline"])
                .args(["--target", TARGET, "--message-format"])
                .args([
                    "json-render-diagnostics",
                    "--manifest-path",
                    "/src/Cargo.toml",
                ]);
            made = self.step(cmd, job, started, "cargo").await;
        }
        let mut rm = self.buildah(job);
        rm.args(["rm", name.as_str()]);
        let cleanup = Limits {
            timeout: Duration::from_secs(60),
            cgroup: None,
        };
        let _ = run(rm, &cleanup, None).await;
        let (log, wasm) = split_messages(&made?.log);
        let Some(wasm) = wasm.and_then(|w| within(&target_dir, &w)) else {
            return Err(BuildFailure::new(
                "build_failed",
                "cargo built no .wasm; make the crate a cdylib (crate-type = [\"cdylib\"])",
                log,
            ));
        };
        let pushed = push(job, &wasm, started).await;
        pushed
            .map(|image| Built {
                image,
                log: cap_log(&log),
            })
            .map_err(|message| BuildFailure::new("build_failed", message, log))
    }
}

/// The host path of `reported`, a file cargo made under `/target`,
/// when it is in `target_dir` once links are followed: the build wrote
/// that directory and may have left links out of it.
fn within(target_dir: &Path, reported: &Path) -> Option<PathBuf> {
    let rest = reported.strip_prefix("/target").ok()?;
    let path = target_dir.join(rest).canonicalize().ok()?;
    path.starts_with(target_dir.canonicalize().ok()?)
        .then_some(path)
}

/// The sysroot of the host's Rust toolchain (asked away from the
/// tenant's source, whose `rust-toolchain.toml` has no say).
async fn sysroot(dir: &Path) -> Result<PathBuf, String> {
    let out = tokio::process::Command::new("rustc")
        .args(["--print", "sysroot"])
        .current_dir(dir)
        .output()
        .await
        .map_err(|e| format!("rustc could not run: {e}; install a Rust toolchain"))?;
    let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if !out.status.success() || path.is_empty() {
        return Err("rustc names no sysroot; install a Rust toolchain".to_owned());
    }
    Ok(PathBuf::from(path))
}

/// The host's `CARGO_HOME`, whose crate cache builds read.
fn cargo_home() -> PathBuf {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))
        .unwrap_or_else(|| PathBuf::from("/root/.cargo"))
}

/// buildah's `TMPDIR`, and the directories cargo writes, given to the
/// build's root.
fn prepare(tmp: &Path, home: &Path, target_dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir(tmp)?;
    for dir in [home, target_dir] {
        std::fs::create_dir(dir)?;
        sandbox::give(dir)?;
    }
    Ok(())
}

/// `-v` flags: the host's system directories, toolchain and crate cache
/// read-only; `home`, the target directory and the source writable.
fn mounts(toolchain: &Path, home: &Path, target_dir: &Path, source: &Path) -> Vec<OsString> {
    let cache = cargo_home();
    let mut binds: Vec<(PathBuf, String, &str)> = SYSTEM
        .iter()
        .filter(|p| Path::new(p).exists())
        .map(|p| (PathBuf::from(p), (*p).to_owned(), ":ro"))
        .collect();
    binds.push((toolchain.to_owned(), "/toolchain".to_owned(), ":ro"));
    binds.push((home.to_owned(), "/cargo".to_owned(), ""));
    for sub in ["registry", "git"] {
        if cache.join(sub).is_dir() {
            binds.push((cache.join(sub), format!("/cargo/{sub}"), ":ro"));
        }
    }
    binds.push((target_dir.to_owned(), "/target".to_owned(), ""));
    binds.push((source.to_owned(), "/src".to_owned(), ""));
    let mut args = Vec::new();
    for (from, to, mode) in binds {
        let mut volume = from.into_os_string();
        volume.push(format!(":{to}{mode}"));
        args.extend(["-v".into(), volume]);
    }
    args
}

/// The human lines of cargo's output, and the `.wasm` it made.
fn split_messages(log: &str) -> (String, Option<PathBuf>) {
    let mut human = String::new();
    let mut wasm = None;
    for line in log.lines() {
        let Some(message) = line
            .starts_with('{')
            .then(|| serde_json::from_str::<serde_json::Value>(line).ok())
            .flatten()
        else {
            human.push_str(line);
            human.push('\n');
            continue;
        };
        if message["reason"] == "compiler-artifact" {
            let made = message["filenames"].as_array().into_iter().flatten();
            for file in made.filter_map(|f| f.as_str()) {
                if file.ends_with(".wasm") {
                    wasm = Some(PathBuf::from(file));
                }
            }
        }
        if let Some(rendered) = message["message"]["rendered"].as_str() {
            human.push_str(rendered);
        }
    }
    (human, wasm)
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

fn descriptor(media_type: &str, digest: &str, size: usize) -> OciDescriptor {
    OciDescriptor {
        media_type: media_type.to_owned(),
        digest: digest.to_owned(),
        size: size as i64,
        ..OciDescriptor::default()
    }
}

/// Pushes the component at `wasm` to the job's target; the image by digest.
async fn push(job: &BuildJob, wasm: &Path, started: Instant) -> Result<String, String> {
    let bytes = tokio::fs::read(wasm)
        .await
        .map_err(|e| format!("reading the built component: {e}"))?;
    let layer_digest = sha256(&bytes);
    let config = WasmConfig::for_component(
        &bytes,
        &layer_digest,
        plateau_core::time::to_rfc3339(plateau_core::time::now_ms()),
    )
    .map_err(|e| format!("the built .wasm is not a component: {e}"))?;
    let config = serde_json::to_vec(&config).map_err(|e| e.to_string())?;
    let config_digest = sha256(&config);
    let manifest = artifact::manifest(
        descriptor(CONFIG_MEDIA_TYPE, &config_digest, config.len()),
        descriptor(LAYER_MEDIA_TYPE, &layer_digest, bytes.len()),
    );
    let manifest = serde_json::to_vec(&manifest).map_err(|e| e.to_string())?;
    let manifest_digest = sha256(&manifest);
    let reference: Reference = job
        .target
        .parse()
        .map_err(|e| format!("the build target is not a reference: {e}"))?;
    let registry = reference.resolve_registry().to_owned();
    let client = Client::new(ClientConfig {
        protocol: ClientProtocol::HttpsExcept(vec![registry.clone()]),
        connect_timeout: Some(Duration::from_secs(10)),
        read_timeout: Some(Duration::from_secs(60)),
        ..ClientConfig::default()
    });
    let auth = RegistryAuth::Basic("plateau".to_owned(), job.push_password.clone());
    client.store_auth_if_needed(&registry, &auth).await;
    let left = job.timeout.saturating_sub(started.elapsed());
    let pushing = async {
        client.push_blob(&reference, bytes, &layer_digest).await?;
        client.push_blob(&reference, config, &config_digest).await?;
        client
            .push_manifest_raw(
                &reference,
                manifest,
                MANIFEST_MEDIA_TYPE.parse().expect("a valid media type"),
            )
            .await
    };
    match tokio::time::timeout(left, pushing).await {
        Ok(Ok(_)) => Ok(format!(
            "{}/{}@{manifest_digest}",
            registry,
            reference.repository()
        )),
        Ok(Err(e)) => Err(format!("pushing the built component failed: {e}")),
        Err(_) => Err("pushing the built component ran out of the build's time".to_owned()),
    }
}
