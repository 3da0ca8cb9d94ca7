//! Resolving a deployment's image reference to a component: from this
//! platform's own registry with the organisation's rights, or anonymously
//! from a registry the operator allows. The artifact is a Wasm OCI
//! artifact (the layout plugins use; its checks are the plugins' own) or,
//! from this platform's registry only, a Linux image (an index picks its
//! linux/amd64 manifest; [`crate::linux_image`] pulls and unpacks it): the
//! manifest's config media type tells them apart.

use std::path::Path;
use std::time::Duration;

use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::manifest::OciImageManifest;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use plateau_plugin_host::oci::artifact::{self, MANIFEST_MEDIA_TYPE};
use plateau_plugin_host::oci::{OciSource, pull};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::linux_image::{self, DOCKER_LIST, DOCKER_MANIFEST, OCI_INDEX};

/// Largest component an app may deploy.
pub const MAX_COMPONENT_BYTES: usize = 64 << 20;

/// This platform's own registry, as the apps service reaches it.
pub trait RegistryAccess: Send + Sync {
    /// Whether `registry` (`host[:port]` of a reference) is this
    /// platform's registry.
    fn is_own(&self, registry: &str) -> bool;
    /// Where this host serves the registry over plain HTTP (loopback).
    fn local_address(&self) -> String;
    /// A short-lived registry bearer that pulls with the rights of
    /// `org_id`, standing for the API token `token_id`.
    fn pull_bearer(&self, org_id: &str, token_id: &str, user_id: Option<&str>) -> String;
    /// A short-lived registry bearer that also pushes, for a build of
    /// `org_id` to store its image.
    fn push_bearer(&self, org_id: &str, token_id: &str, user_id: Option<&str>) -> String;
}

/// Who pulls: the organisation, through the token of the request.
#[derive(Clone, Debug)]
pub struct PullAs {
    pub org_id: String,
    pub token_id: String,
    pub user_id: Option<String>,
}

/// A component resolved from a reference.
#[derive(Debug)]
pub struct Resolved {
    /// The manifest digest the reference resolved to.
    pub manifest_digest: String,
    /// The component's (layer) digest, or the Linux image's config digest.
    pub component_digest: String,
    /// What `app_components` keeps: the component, or the image's config
    /// (its rootfs is unpacked under the images directory).
    pub stored: Vec<u8>,
}

/// `image` as a reference (`oci://` optional), or a sentence saying why
/// it is not one; the API checks it with this before storing it.
pub fn parse_reference(image: &str) -> Result<Reference, String> {
    let text = image.trim().strip_prefix("oci://").unwrap_or(image.trim());
    if text.is_empty() || text.len() > 1024 || text.chars().any(char::is_control) {
        return Err(
            "must be an image reference of at most 1024 characters without control characters"
                .to_owned(),
        );
    }
    text.parse().map_err(|_| {
        format!("{text} is not an image reference; write registry/repository:tag or @sha256:<hex>")
    })
}

/// Resolves `image`, failing with a sentence for the deployment's reason.
pub async fn resolve(
    image: &str,
    who: &PullAs,
    registry: &dyn RegistryAccess,
    allowed: &[String],
    images: Option<&Path>,
) -> Result<Resolved, String> {
    let text = image.trim().strip_prefix("oci://").unwrap_or(image.trim());
    let reference = parse_reference(image)?;
    if registry.is_own(reference.registry()) {
        return own(&reference, who, registry, images).await;
    }
    if allowed.iter().any(|r| r == reference.registry()) {
        let pulled = pull(
            &OciSource {
                reference: text.to_owned(),
                ..OciSource::default()
            },
            MAX_COMPONENT_BYTES,
        )
        .await
        .map_err(|e| e.to_string())?;
        return Ok(Resolved {
            manifest_digest: pulled.manifest_digest,
            component_digest: pulled.layer_digest,
            stored: pulled.wasm,
        });
    }
    Err(format!(
        "apps pull from this platform's registry or from registries the operator allows; {} is neither",
        reference.registry()
    ))
}

/// Pulls from this host's registry over loopback with a bearer of the
/// organisation: another organisation's repositories answer as absent.
async fn own(
    reference: &Reference,
    who: &PullAs,
    registry: &dyn RegistryAccess,
    images: Option<&Path>,
) -> Result<Resolved, String> {
    let (client, auth, target) = own_client(reference, who, registry);
    from_registry(&client, &auth, target, reference, images, &who.org_id).await
}

/// Resolves `target` (`reference` as `client` reaches it) with `auth`:
/// a pinned digest is checked against the manifest's bytes, an index
/// picks its linux/amd64 image, a Linux image is unpacked under `images`
/// for `org_id` (each layer checked against its digest), a Wasm
/// component is read whole and checked.
pub(crate) async fn from_registry(
    client: &Client,
    auth: &RegistryAuth,
    target: Reference,
    reference: &Reference,
    images: Option<&Path>,
    org_id: &str,
) -> Result<Resolved, String> {
    let local = target.registry().to_owned();
    let auth = auth.clone();
    let absent = |e: oci_client::errors::OciDistributionError| {
        format!(
            "the registry has no {} for this organisation ({e})",
            reference.whole()
        )
    };
    let (raw, manifest_digest) = client
        .pull_manifest_raw(
            &target,
            &auth,
            &[MANIFEST_MEDIA_TYPE, OCI_INDEX, DOCKER_MANIFEST, DOCKER_LIST],
        )
        .await
        .map_err(absent)?;
    if let Some(pinned) = reference.digest()
        && sha256(&raw) != pinned
    {
        return Err(format!(
            "the manifest digest does not match: expected {pinned}"
        ));
    }
    let mut doc: Value = serde_json::from_slice(&raw)
        .map_err(|e| format!("the manifest is not an OCI image manifest: {e}"))?;
    let mut raw = raw;
    let mut target = target;
    if linux_image::is_index(&doc) {
        let digest = linux_image::pick_amd64(&doc)?;
        target = Reference::with_digest(local, reference.repository().to_owned(), digest.clone());
        let (inner, _) = client
            .pull_manifest_raw(&target, &auth, &[MANIFEST_MEDIA_TYPE, DOCKER_MANIFEST])
            .await
            .map_err(absent)?;
        if sha256(&inner) != digest {
            return Err(format!(
                "the image manifest does not match its digest {digest}"
            ));
        }
        doc = serde_json::from_slice(&inner)
            .map_err(|e| format!("the image manifest is not valid: {e}"))?;
        raw = inner;
    }
    if linux_image::is_linux_image(&doc) {
        let images = images.ok_or(
            "this host runs no Linux images: install runc (apt-get install runc) and restart plateau",
        )?;
        let (config_digest, config) =
            linux_image::pull(client, &target, &doc, images, org_id).await?;
        return Ok(Resolved {
            manifest_digest,
            component_digest: config_digest,
            stored: config,
        });
    }
    let manifest: OciImageManifest = serde_json::from_slice(&raw)
        .map_err(|e| format!("the manifest is not an OCI image manifest: {e}"))?;
    let layer = artifact::component_layer(&manifest).map_err(|e| e.to_string())?;
    if layer.size < 0 || layer.size as u64 > MAX_COMPONENT_BYTES as u64 {
        return Err(format!(
            "the component is {} bytes; apps deploy components of at most {MAX_COMPONENT_BYTES} bytes",
            layer.size
        ));
    }
    let mut wasm = Vec::with_capacity(layer.size as usize);
    client
        .pull_blob(&target, layer, &mut wasm)
        .await
        .map_err(absent)?;
    if sha256(&wasm) != layer.digest {
        return Err(format!(
            "the component's digest does not match its descriptor {}",
            layer.digest
        ));
    }
    Ok(Resolved {
        manifest_digest,
        component_digest: layer.digest.clone(),
        stored: wasm,
    })
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// A client of this host's registry over loopback, a bearer of the
/// organisation, and `reference` retargeted there.
fn own_client(
    reference: &Reference,
    who: &PullAs,
    registry: &dyn RegistryAccess,
) -> (Client, RegistryAuth, Reference) {
    let local = registry.local_address();
    let target = match (reference.tag(), reference.digest()) {
        (_, Some(digest)) => Reference::with_digest(
            local.clone(),
            reference.repository().to_owned(),
            digest.to_owned(),
        ),
        (tag, None) => Reference::with_tag(
            local.clone(),
            reference.repository().to_owned(),
            tag.unwrap_or("latest").to_owned(),
        ),
    };
    let client = Client::new(ClientConfig {
        protocol: ClientProtocol::HttpsExcept(vec![local.clone()]),
        connect_timeout: Some(Duration::from_secs(10)),
        read_timeout: Some(Duration::from_secs(60)),
        ..ClientConfig::default()
    });
    let auth = RegistryAuth::Bearer(registry.pull_bearer(
        &who.org_id,
        &who.token_id,
        who.user_id.as_deref(),
    ));
    (client, auth, target)
}

/// Why a reference cannot be deployed, known before a deployment starts.
#[derive(Debug)]
pub enum Unavailable {
    /// The registry has no such manifest, or not for this organisation,
    /// or the reference names a registry apps may not pull from.
    Absent(String),
    /// The registry did not answer; the deployment may still work later.
    Unreachable(String),
}

/// Whether `image` names a manifest the organisation can pull, asked
/// with a HEAD of the manifest (nothing is downloaded).
pub async fn check_exists(
    image: &str,
    who: &PullAs,
    registry: &dyn RegistryAccess,
    allowed: &[String],
) -> Result<(), Unavailable> {
    let reference = parse_reference(image).map_err(Unavailable::Absent)?;
    let (client, auth, target) = if registry.is_own(reference.registry()) {
        own_client(&reference, who, registry)
    } else if allowed.iter().any(|r| r == reference.registry()) {
        let client = Client::new(ClientConfig {
            connect_timeout: Some(Duration::from_secs(10)),
            read_timeout: Some(Duration::from_secs(20)),
            ..ClientConfig::default()
        });
        (client, RegistryAuth::Anonymous, reference.clone())
    } else {
        return Err(Unavailable::Absent(format!(
            "apps pull from this platform's registry or from registries the operator allows; {} is neither",
            reference.registry()
        )));
    };
    use oci_client::errors::{OciDistributionError as E, OciErrorCode as C};
    match client.fetch_manifest_digest(&target, &auth).await {
        Ok(_) => Ok(()),
        Err(
            E::ImageManifestNotFoundError(_)
            | E::UnauthorizedError { .. }
            | E::AuthenticationFailure(_),
        ) => Err(absent(&reference)),
        Err(E::RegistryError { envelope, .. })
            if envelope.errors.iter().any(|e| {
                matches!(
                    e.code,
                    C::ManifestUnknown | C::NameUnknown | C::NotFound | C::Denied | C::Unauthorized
                )
            }) =>
        {
            Err(absent(&reference))
        }
        Err(E::ServerError {
            code: 401 | 403 | 404,
            ..
        }) => Err(absent(&reference)),
        Err(e) => Err(Unavailable::Unreachable(format!(
            "the registry of {} did not answer: {e}",
            reference.whole()
        ))),
    }
}

fn absent(reference: &Reference) -> Unavailable {
    Unavailable::Absent(format!(
        "{} does not exist, or this organisation cannot pull it",
        reference.whole()
    ))
}
