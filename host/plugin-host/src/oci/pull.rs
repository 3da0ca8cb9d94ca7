//! Pulling a plugin artifact from an OCI registry with `oci-client`: the
//! manifest (its digest checked when the reference pins one), its media
//! types, then the component layer, counted against a size cap and checked
//! against the layer digest. Nothing here loads or stores the component.

use std::time::Duration;

use futures::StreamExt;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::OciImageManifest;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use sha2::{Digest as _, Sha256, Sha512};

use super::artifact::{self, ArtifactError, MANIFEST_MEDIA_TYPE};

/// Where to pull a plugin from, as the operator sent it.
#[derive(Clone, Debug, Default)]
pub struct OciSource {
    /// `registry/repository:tag`, `registry/repository@sha256:...`, or
    /// both; an `oci://` prefix is allowed.
    pub reference: String,
    pub username: Option<String>,
    pub password: Option<String>,
    /// Speak plain HTTP to this registry.
    pub insecure: bool,
}

/// A component pulled and verified.
#[derive(Debug)]
pub struct Pulled {
    pub wasm: Vec<u8>,
    pub manifest_digest: String,
    pub layer_digest: String,
    /// The reference pinned to the manifest digest it resolved to:
    /// `registry/repository[:tag]@sha256:...`.
    pub pinned: String,
}

#[derive(Debug, thiserror::Error)]
pub enum PullError {
    #[error(
        "{0} is not an OCI reference; write registry/repository:tag or registry/repository@sha256:<hex>"
    )]
    InvalidReference(String),
    #[error("the registry has no {reference}: {detail}")]
    Unknown { reference: String, detail: String },
    #[error(
        "the registry refused access to {reference}: {detail}; send a user name and password that may pull it"
    )]
    Denied { reference: String, detail: String },
    #[error(transparent)]
    NotAPlugin(#[from] ArtifactError),
    #[error("the {what} digest does not match: expected {expected}, the registry sent {actual}")]
    DigestMismatch {
        what: &'static str,
        expected: String,
        actual: String,
    },
    #[error("the component is {size} bytes; the host loads components of at most {max} bytes")]
    TooLarge { size: i64, max: usize },
    #[error("could not reach the registry {registry}: {detail}")]
    Unreachable { registry: String, detail: String },
    #[error("the registry failed: {0}")]
    Registry(String),
}

/// Pulls the plugin artifact `source` names; the component may be at most
/// `max_bytes`.
pub async fn pull(source: &OciSource, max_bytes: usize) -> Result<Pulled, PullError> {
    let text = source
        .reference
        .trim()
        .strip_prefix("oci://")
        .unwrap_or(source.reference.trim());
    let reference: Reference = text
        .parse()
        .map_err(|_| PullError::InvalidReference(text.to_owned()))?;
    let client = registry_client(&reference, source.insecure);
    let auth = match (&source.username, &source.password) {
        (Some(user), Some(password)) => RegistryAuth::Basic(user.clone(), password.clone()),
        (None, Some(password)) => RegistryAuth::Basic("plateau".to_owned(), password.clone()),
        _ => RegistryAuth::Anonymous,
    };
    let fail = |e| classify(e, &reference, source.insecure);
    let (raw, manifest_digest) = client
        .pull_manifest_raw(&reference, &auth, &[MANIFEST_MEDIA_TYPE])
        .await
        .map_err(fail)?;
    if let Some(pinned) = reference.digest() {
        let actual = digest_of(pinned, &raw)?;
        if actual != pinned {
            return Err(PullError::DigestMismatch {
                what: "manifest",
                expected: pinned.to_owned(),
                actual,
            });
        }
    }
    let manifest: OciImageManifest =
        serde_json::from_slice(&raw).map_err(|e| ArtifactError::ManifestInvalid(e.to_string()))?;
    let layer = artifact::component_layer(&manifest)?;
    if layer.size < 0 || layer.size as u64 > max_bytes as u64 {
        return Err(PullError::TooLarge {
            size: layer.size,
            max: max_bytes,
        });
    }
    let mut stream = client
        .pull_blob_stream(&reference, layer)
        .await
        .map_err(fail)?;
    let mut wasm = Vec::with_capacity(layer.size as usize);
    let mut failed = None;
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(bytes) if wasm.len() + bytes.len() <= layer.size as usize => {
                wasm.extend_from_slice(&bytes);
            }
            Ok(_) => {
                return Err(PullError::Registry(format!(
                    "the layer is longer than the {} bytes its descriptor says",
                    layer.size
                )));
            }
            // oci-client's own digest check fails the stream at its end;
            // the check below says which digest differed.
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    if let Some(e) = &failed
        && (wasm.len() as i64) < layer.size
    {
        return Err(PullError::Registry(format!(
            "reading the layer stopped after {} of {} bytes: {e}",
            wasm.len(),
            layer.size
        )));
    }
    let actual = digest_of(&layer.digest, &wasm)?;
    if actual != layer.digest {
        return Err(PullError::DigestMismatch {
            what: "layer",
            expected: layer.digest.clone(),
            actual,
        });
    }
    if let Some(e) = failed {
        return Err(PullError::Registry(format!("reading the layer: {e}")));
    }
    let pinned = match reference.tag() {
        Some(tag) => Reference::with_tag_and_digest(
            reference.registry().to_owned(),
            reference.repository().to_owned(),
            tag.to_owned(),
            manifest_digest.clone(),
        ),
        None => reference.clone_with_digest(manifest_digest.clone()),
    };
    Ok(Pulled {
        wasm,
        manifest_digest,
        layer_digest: layer.digest.clone(),
        pinned: pinned.whole(),
    })
}

/// An `oci-client` for `reference`'s registry: HTTPS, or plain HTTP to
/// that one registry when `insecure`.
pub fn registry_client(reference: &Reference, insecure: bool) -> Client {
    let protocol = if insecure {
        ClientProtocol::HttpsExcept(vec![reference.resolve_registry().to_owned()])
    } else {
        ClientProtocol::Https
    };
    Client::new(ClientConfig {
        protocol,
        connect_timeout: Some(Duration::from_secs(10)),
        read_timeout: Some(Duration::from_secs(60)),
        ..ClientConfig::default()
    })
}

/// The digest of `bytes` with the algorithm of `expected`.
fn digest_of(expected: &str, bytes: &[u8]) -> Result<String, PullError> {
    match expected.split_once(':') {
        Some(("sha256", _)) => Ok(format!("sha256:{}", hex::encode(Sha256::digest(bytes)))),
        Some(("sha512", _)) => Ok(format!("sha512:{}", hex::encode(Sha512::digest(bytes)))),
        _ => Err(PullError::Registry(format!(
            "unsupported digest {expected}; sha256 and sha512 are supported"
        ))),
    }
}

/// Says what an `oci-client` failure means for the operator.
fn classify(e: OciDistributionError, reference: &Reference, insecure: bool) -> PullError {
    let unknown = |detail: String| PullError::Unknown {
        reference: reference.whole(),
        detail,
    };
    let denied = |detail: String| PullError::Denied {
        reference: reference.whole(),
        detail,
    };
    match e {
        OciDistributionError::RegistryError { envelope, .. } => {
            let detail = envelope
                .errors
                .iter()
                .map(|e| format!("{:?}: {}", e.code, e.message))
                .collect::<Vec<_>>()
                .join("; ");
            match envelope.errors.first().map(|e| &e.code) {
                Some(
                    OciErrorCode::ManifestUnknown
                    | OciErrorCode::NameUnknown
                    | OciErrorCode::BlobUnknown
                    | OciErrorCode::NotFound,
                ) => unknown(detail),
                Some(OciErrorCode::Unauthorized | OciErrorCode::Denied) => denied(detail),
                _ => PullError::Registry(detail),
            }
        }
        OciDistributionError::ImageManifestNotFoundError(detail) => unknown(detail),
        OciDistributionError::ServerError {
            code: 404, message, ..
        } => unknown(message),
        OciDistributionError::ServerError {
            code: 401 | 403,
            message,
            ..
        } => denied(message),
        OciDistributionError::UnauthorizedError { url } => denied(format!("401 from {url}")),
        OciDistributionError::AuthenticationFailure(detail) => denied(detail),
        OciDistributionError::DigestError(oci_client::errors::DigestError::VerificationError {
            expected,
            actual,
        }) => PullError::DigestMismatch {
            what: "manifest",
            expected,
            actual,
        },
        OciDistributionError::RequestError(e) => {
            let mut detail = error_chain(&e);
            if !insecure {
                detail.push_str(
                    "; for a registry that serves plain HTTP, allow it with \"insecure\": true",
                );
            }
            PullError::Unreachable {
                registry: reference.resolve_registry().to_owned(),
                detail,
            }
        }
        other => PullError::Registry(other.to_string()),
    }
}

/// An error and its sources, joined: reqwest's own message hides the cause.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
