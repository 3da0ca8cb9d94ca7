//! Rust crates for `wasm32-wasip2`: a source with a `Cargo.toml` and no
//! `Dockerfile` is built with cargo (offline, against the host's crate
//! cache, one target directory per organisation) into a `wasi:http`
//! component, pushed to the organisation's repository as a Wasm OCI
//! artifact (the layout plugins use).
//!
//! Cargo runs the crate's build scripts and procedural macros as the
//! server's user, inside the build's process group and memory cgroup
//! only: an operator turns these builds on (`PLATEAU_APPS_CARGO_BUILDS`)
//! for code they trust.

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
use super::{BuildFailure, BuildJob, Built, cap_log};

const TARGET: &str = "wasm32-wasip2";

impl LocalBuilder {
    pub(super) async fn cargo(&self, job: &BuildJob) -> Result<Built, BuildFailure> {
        let started = Instant::now();
        let org = job.target.split('/').nth(1).unwrap_or("shared");
        let target_dir = self.dir().join("cargo-target").join(org);
        let mut cmd = tokio::process::Command::new("cargo");
        cmd.args(["build", "--release", "--offline", "--target", TARGET])
            .args([
                "--message-format",
                "json-render-diagnostics",
                "--manifest-path",
            ])
            .arg(job.source.join("Cargo.toml"))
            .current_dir(&job.source)
            .env("CARGO_TARGET_DIR", &target_dir)
            .env("CARGO_TERM_COLOR", "never")
            .env_remove("CARGO_BUILD_BUILD_DIR")
            .env_remove("RUSTFLAGS");
        let out = self.step(cmd, job, started, "cargo").await?;
        let (log, wasm) = split_messages(&out.log);
        let Some(wasm) = wasm else {
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
