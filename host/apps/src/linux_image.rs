//! Linux images (an OCI image manifest, or an index naming one for
//! linux/amd64): the config is checked and kept in `app_components`
//! under its digest, the layers are pulled and unpacked in order into
//! `<images dir>/<org>/<config hex>/rootfs`, once per organisation.
//!
//! **Invariant:** a rootfs directory exists only complete: layers are
//! unpacked into a `.partial` directory renamed into place at the end,
//! under the image's lock (`<images dir>/<org>/<config hex>.lock`).
//! A runner that lacks an image fetches it the same way ([`crate::fetch`]).

use std::path::{Path, PathBuf};

use oci_client::manifest::OciDescriptor;
use oci_client::{Client, Reference};
use plateau_runner::container::{ImageConfig, unpack};
use serde_json::Value;
use sha2::{Digest as _, Sha256};
use tokio::io::AsyncWriteExt;

/// Manifest media types a deployment may name.
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
pub const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
/// Config media types of a Linux image.
const IMAGE_CONFIGS: &[&str] = &[
    "application/vnd.oci.image.config.v1+json",
    "application/vnd.docker.container.image.v1+json",
];
/// Largest image config, and largest sum of an image's layers.
const MAX_CONFIG_BYTES: i64 = 1 << 20;
pub const MAX_IMAGE_BYTES: i64 = 2 << 30;

/// Whether a manifest's bytes are an index (or a Docker manifest list).
pub fn is_index(manifest: &Value) -> bool {
    matches!(
        manifest["mediaType"].as_str(),
        Some(OCI_INDEX | DOCKER_LIST)
    ) || (manifest["manifests"].is_array() && manifest["layers"].is_null())
}

/// Whether a manifest is of a Linux image (by its config's media type).
pub fn is_linux_image(manifest: &Value) -> bool {
    manifest["config"]["mediaType"]
        .as_str()
        .is_some_and(|t| IMAGE_CONFIGS.contains(&t))
}

/// The digest of the linux/amd64 manifest an index names.
pub fn pick_amd64(index: &Value) -> Result<String, String> {
    let entries = index["manifests"].as_array().cloned().unwrap_or_default();
    entries
        .iter()
        .find(|m| {
            m["platform"]["os"] == "linux"
                && m["platform"]["architecture"] == "amd64"
                && m["digest"].is_string()
        })
        .and_then(|m| m["digest"].as_str().map(str::to_owned))
        .ok_or_else(|| "the image index has no linux/amd64 image; build one for linux/amd64".into())
}

/// The rootfs of the image with config `digest`, for `org_id`.
pub fn rootfs(images: &Path, org_id: &str, digest: &str) -> PathBuf {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    images.join(org_id).join(hex).join("rootfs")
}

/// Pulls a Linux image's config and unpacks its layers (unless already
/// unpacked); returns the config's digest and bytes.
pub async fn pull(
    client: &Client,
    target: &Reference,
    manifest: &Value,
    images: &Path,
    org_id: &str,
) -> Result<(String, Vec<u8>), String> {
    let config = descriptor(&manifest["config"])?;
    if config.size > MAX_CONFIG_BYTES {
        return Err("the image config is too large".to_owned());
    }
    let mut bytes = Vec::new();
    client
        .pull_blob(target, &config, &mut bytes)
        .await
        .map_err(|e| format!("cannot pull the image config: {e}"))?;
    if sha256(&bytes) != config.digest {
        return Err("the image config's digest does not match its descriptor".to_owned());
    }
    ImageConfig::parse(&bytes).map_err(|e| e.to_string())?;
    let root = rootfs(images, org_id, &config.digest);
    if root.is_dir() {
        return Ok((config.digest, bytes));
    }
    // One unpacking of an image at a time on this host, whichever process
    // (the API deploying it, the agent fetching it) asks.
    let hex = config.digest.trim_start_matches("sha256:");
    let locks = plateau_kernel::ResourceLocks::new(images.join(org_id))
        .map_err(|e| format!("cannot lock the image: {e}"))?;
    let _held = locks
        .lock(hex)
        .await
        .map_err(|e| format!("cannot lock the image: {e}"))?;
    if root.is_dir() {
        return Ok((config.digest, bytes));
    }
    let layers: Vec<OciDescriptor> = manifest["layers"]
        .as_array()
        .ok_or("the image manifest has no layers")?
        .iter()
        .map(descriptor)
        .collect::<Result<_, _>>()?;
    let total: i64 = layers.iter().map(|l| l.size.max(0)).sum();
    if total > MAX_IMAGE_BYTES {
        return Err(format!(
            "the image's layers are {total} bytes; apps deploy images of at most {MAX_IMAGE_BYTES} bytes"
        ));
    }
    let parent = root.parent().ok_or("no image directory")?.to_path_buf();
    let partial = parent.join("rootfs.partial");
    let unpacked = unpack_layers(client, target, &layers, &parent, &partial).await;
    if unpacked.is_err() {
        // Nothing unchecked stays: the next try starts afresh anyway.
        let _ = tokio::fs::remove_dir_all(&partial).await;
        let _ = tokio::fs::remove_file(parent.join("layer.partial")).await;
    }
    unpacked?;
    tokio::fs::rename(&partial, &root)
        .await
        .map_err(|e| format!("cannot keep the rootfs: {e}"))?;
    Ok((config.digest, bytes))
}

/// Pulls `layers` one by one, each checked against its digest, and
/// applies them in order to `partial`.
async fn unpack_layers(
    client: &Client,
    target: &Reference,
    layers: &[OciDescriptor],
    parent: &Path,
    partial: &Path,
) -> Result<(), String> {
    let _ = tokio::fs::remove_dir_all(&partial).await;
    tokio::fs::create_dir_all(&partial)
        .await
        .map_err(|e| format!("cannot create {}: {e}", partial.display()))?;
    for layer in layers {
        let file = parent.join("layer.partial");
        let mut out = tokio::fs::File::create(&file)
            .await
            .map_err(|e| format!("cannot write the layer: {e}"))?;
        client
            .pull_blob(target, layer, &mut out)
            .await
            .map_err(|e| format!("cannot pull layer {}: {e}", layer.digest))?;
        out.flush()
            .await
            .map_err(|e| format!("cannot write the layer: {e}"))?;
        drop(out);
        let (into, digest) = (partial.to_path_buf(), layer.digest.clone());
        tokio::task::spawn_blocking(move || -> Result<(), String> {
            let open = || std::fs::File::open(&file).map_err(|e| e.to_string());
            let mut hasher = Sha256::new();
            std::io::copy(&mut open()?, &mut hasher).map_err(|e| e.to_string())?;
            if format!("sha256:{}", hex::encode(hasher.finalize())) != digest {
                return Err(format!("layer {digest} does not match its digest"));
            }
            unpack::apply_layer(open()?, &into).map_err(|e| e.to_string())?;
            let _ = std::fs::remove_file(&file);
            Ok(())
        })
        .await
        .map_err(|e| e.to_string())??;
    }
    unpack::finish(partial).map_err(|e| e.to_string())
}

fn descriptor(v: &Value) -> Result<OciDescriptor, String> {
    let (Some(media_type), Some(digest), Some(size)) = (
        v["mediaType"].as_str(),
        v["digest"].as_str(),
        v["size"].as_i64(),
    ) else {
        return Err("the image manifest has a descriptor without mediaType, digest or size".into());
    };
    if !digest.starts_with("sha256:") {
        return Err(format!("{digest} is not a sha256 digest"));
    }
    Ok(OciDescriptor {
        media_type: media_type.to_owned(),
        digest: digest.to_owned(),
        size,
        ..OciDescriptor::default()
    })
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}
