//! A runner fetching the Linux image of a deployment it lacks. The API
//! process that resolved a deployment unpacked its image on its own host
//! only; a runner asked to run it elsewhere (placed there, migrated
//! there, rescheduled there after its runner died) pulls it itself from
//! the registry the deployment's reference names (this platform's
//! registry: the host that resolved it, or the public registry address),
//! pinned to the manifest digest the deployment recorded, with the host's
//! own pull-only bearer of the app's organisation ([`HostPull`]).
//!
//! Every byte is checked before anything runs: the manifest against the
//! recorded digest, the index's linux/amd64 manifest against its digest,
//! the config and each layer against their descriptors
//! ([`crate::linux_image::pull`]), and the config's digest against the
//! component the deployment runs. A fetch that fails fails the launch on
//! this host with its reason (a migration ends failed, the app staying
//! where it was; a rescheduled app records `app.start_failed`), and the
//! plane leaves the deployment alone for a while before trying again.

use std::path::Path;
use std::time::{Duration, Instant};

use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use plateau_store::apps::deployments::Deployment;

/// How a runner reaches this platform's registry for an image it lacks.
pub trait HostPull: Send + Sync {
    /// A short-lived pull-only registry bearer of `org_id` that stands
    /// for no API token: the host's own.
    fn bearer(&self, org_id: &str) -> String;
    /// Whether `registry` (`host[:port]` of a reference) is reached over
    /// HTTPS rather than plain HTTP.
    fn https(&self, registry: &str) -> bool;
    /// Whether `registry` is this platform's: the only one the host's
    /// bearer is ever sent to. An image from a registry the operator
    /// allows is fetched anonymously, as it was resolved.
    fn is_own(&self, registry: &str) -> bool;
}

/// Fetches and unpacks under `images` the Linux image deployment `d` of
/// an app of `org_id` runs, whose config is `config_digest`; checks
/// every digest on the way.
pub async fn fetch(
    pull: &dyn HostPull,
    images: &Path,
    org_id: &str,
    d: &Deployment,
    config_digest: &str,
) -> Result<(), String> {
    let image = d
        .image
        .as_deref()
        .ok_or("the deployment names no image to fetch")?;
    let manifest = d
        .digest
        .as_deref()
        .ok_or("the deployment recorded no manifest digest to fetch")?;
    let named = crate::image::parse_reference(image)?;
    let registry = named.registry().to_owned();
    let pinned = Reference::with_digest(
        registry.clone(),
        named.repository().to_owned(),
        manifest.to_owned(),
    );
    let protocol = if pull.https(&registry) {
        ClientProtocol::Https
    } else {
        ClientProtocol::Http
    };
    let client = Client::new(ClientConfig {
        protocol,
        connect_timeout: Some(Duration::from_secs(10)),
        read_timeout: Some(Duration::from_secs(60)),
        ..ClientConfig::default()
    });
    let auth = if pull.is_own(&registry) {
        RegistryAuth::Bearer(pull.bearer(org_id))
    } else {
        RegistryAuth::Anonymous
    };
    let started = Instant::now();
    let why = |e: String| {
        format!("this host lacks image {image} and cannot fetch it from {registry}: {e}")
    };
    let resolved = crate::image::from_registry(
        &client,
        &auth,
        pinned.clone(),
        &pinned,
        Some(images),
        org_id,
    )
    .await
    .map_err(why)?;
    if resolved.component_digest != config_digest {
        return Err(why(format!(
            "its config is {}, the deployment runs {config_digest}",
            resolved.component_digest
        )));
    }
    tracing::info!(
        image,
        digest = manifest,
        ms = started.elapsed().as_millis() as u64,
        "apps: fetched an image this host lacked"
    );
    Ok(())
}
