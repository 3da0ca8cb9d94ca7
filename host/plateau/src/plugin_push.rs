//! `plateau plugin push FILE REF`: packages a component as a Wasm OCI
//! artifact in the CNCF layout (config `application/vnd.wasm.config.v0+json`,
//! one `application/wasm` layer) and pushes it with `oci-client`. The
//! component goes up in chunks (PATCH with `Content-Range`), and the
//! progress bar moves as the registry acknowledges each one.

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use bytes::Bytes;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use plateau_core::time;
use plateau_plugin_host::admin::MAX_COMPONENT_BYTES;
use plateau_plugin_host::oci::artifact::{
    self, CONFIG_MEDIA_TYPE, LAYER_MEDIA_TYPE, TITLE_ANNOTATION,
};
use plateau_plugin_host::oci::{WasmConfig, registry_client};
use serde_json::json;
use sha2::{Digest as _, Sha256};

/// Bytes per PATCH request.
const CHUNK_BYTES: usize = 1 << 20;

/// How to log in to a registry, for `push` and for `load oci://...`.
#[derive(Args, Clone, Debug)]
pub struct RegistryLogin {
    /// The registry's user name (Plateau's own registry takes `plateau`).
    #[arg(long, default_value = "plateau")]
    pub username: String,
    /// Read the registry password (for Plateau's registry, an API token
    /// with registry:write to push, registry:read to load) from standard
    /// input; otherwise PLATEAU_REGISTRY_PASSWORD is used if set.
    #[arg(long)]
    pub password_stdin: bool,
    /// Speak plain HTTP to the registry (a local or test registry); HTTPS
    /// otherwise.
    #[arg(long)]
    pub insecure: bool,
}

impl RegistryLogin {
    /// The password from standard input or `PLATEAU_REGISTRY_PASSWORD`.
    pub fn password(&self) -> anyhow::Result<Option<String>> {
        if self.password_stdin {
            let mut line = String::new();
            std::io::stdin()
                .lock()
                .read_line(&mut line)
                .context("reading the password from standard input")?;
            let password = line.trim_end_matches(['\r', '\n']).to_owned();
            if password.is_empty() {
                bail!("--password-stdin read an empty password");
            }
            return Ok(Some(password));
        }
        Ok(std::env::var("PLATEAU_REGISTRY_PASSWORD")
            .ok()
            .filter(|p| !p.is_empty()))
    }
}

#[derive(Args)]
pub struct PushArgs {
    /// The component to push (.wasm, built for wasm32-wasip2).
    file: PathBuf,
    /// Where to push it: registry/repository:tag (an oci:// prefix is
    /// allowed), for example localhost:8080/<org id>/plugins/notes:1.0.0.
    reference: String,
    #[command(flatten)]
    login: RegistryLogin,
}

pub async fn run(args: PushArgs) -> anyhow::Result<()> {
    let text = args
        .reference
        .strip_prefix("oci://")
        .unwrap_or(&args.reference);
    let reference: Reference = text.parse().map_err(|e| {
        anyhow::anyhow!("{text} is not an OCI reference ({e}); write registry/repository:tag")
    })?;
    if reference.digest().is_some() {
        bail!("push to a tag (registry/repository:tag); the registry names the digest");
    }
    let file_size = std::fs::metadata(&args.file)
        .with_context(|| format!("reading {}", args.file.display()))?
        .len();
    if file_size > MAX_COMPONENT_BYTES as u64 {
        bail!(
            "{} is {file_size} bytes; Plateau loads components of at most {MAX_COMPONENT_BYTES} bytes",
            args.file.display()
        );
    }
    let wasm =
        std::fs::read(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    let layer_digest = sha256(&wasm);
    let config = WasmConfig::for_component(&wasm, &layer_digest, time::to_rfc3339(time::now_ms()))
        .with_context(|| format!("{} cannot be pushed as a plugin", args.file.display()))?;
    let config = serde_json::to_vec(&config)?;
    let config_digest = sha256(&config);
    let manifest = artifact::manifest(
        descriptor(CONFIG_MEDIA_TYPE, &config_digest, config.len(), None),
        descriptor(
            LAYER_MEDIA_TYPE,
            &layer_digest,
            wasm.len(),
            file_name(&args.file),
        ),
    );
    let manifest = serde_json::to_vec(&manifest)?;
    let manifest_digest = sha256(&manifest);

    let client = registry_client(&reference, args.login.insecure);
    let auth = match args.login.password()? {
        Some(password) => RegistryAuth::Basic(args.login.username.clone(), password),
        None => RegistryAuth::Anonymous,
    };
    let registry = reference.resolve_registry().to_owned();
    client.store_auth_if_needed(&registry, &auth).await;
    let size = wasm.len();
    let uploaded = push_layer(&client, &reference, Bytes::from(wasm), &layer_digest)
        .await
        .with_context(|| format!("pushing the component to {registry}"))?;
    client
        .push_blob(&reference, config, &config_digest)
        .await
        .with_context(|| format!("pushing the config to {registry}"))?;
    client
        .push_manifest_raw(&reference, manifest, artifact::MANIFEST_MEDIA_TYPE.parse()?)
        .await
        .with_context(|| format!("pushing the manifest to {registry}"))?;
    let pinned = reference.clone_with_digest(manifest_digest.clone());
    let report = json!({
        "reference": reference.whole(),
        "pinned": pinned.whole(),
        "digest": manifest_digest,
        "layer": {
            "mediaType": LAYER_MEDIA_TYPE,
            "digest": layer_digest,
            "size": size,
            "uploaded": uploaded,
        },
    });
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}

/// Pushes the component in chunks unless the repository has it already;
/// returns whether it was uploaded.
async fn push_layer(
    client: &Client,
    reference: &Reference,
    wasm: Bytes,
    digest: &str,
) -> anyhow::Result<bool> {
    let bar = progress_bar(wasm.len() as u64);
    if client.blob_exists(reference, digest).await? {
        bar.finish_with_message("component already in the registry");
        return Ok(false);
    }
    let chunks =
        futures::stream::unfold((wasm, 0usize, bar.clone()), |(wasm, at, bar)| async move {
            // Polled again only once the previous chunk's PATCH was answered.
            bar.set_position(at as u64);
            if at >= wasm.len() {
                return None;
            }
            let end = (at + CHUNK_BYTES).min(wasm.len());
            Some((Ok(wasm.slice(at..end)), (wasm, end, bar)))
        });
    client
        .push_blob_stream(reference, chunks, digest, None)
        .await?;
    bar.finish_with_message("component pushed");
    Ok(true)
}

/// A bar on standard error when it is a terminal; hidden otherwise.
fn progress_bar(len: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template(
            "{msg} [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        )
        .expect("a valid template")
        .progress_chars("=> "),
    );
    bar.set_message("pushing");
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

fn descriptor(media_type: &str, digest: &str, size: usize, title: Option<String>) -> OciDescriptor {
    OciDescriptor {
        media_type: media_type.to_owned(),
        digest: digest.to_owned(),
        size: size as i64,
        annotations: title.map(|t| BTreeMap::from([(TITLE_ANNOTATION.to_owned(), t)])),
        ..OciDescriptor::default()
    }
}

fn file_name(path: &Path) -> Option<String> {
    path.file_name().map(|n| n.to_string_lossy().into_owned())
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}
