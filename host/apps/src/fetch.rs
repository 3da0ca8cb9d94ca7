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

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    struct Pull {
        own: bool,
    }

    impl HostPull for Pull {
        fn bearer(&self, _org_id: &str) -> String {
            "host-bearer-secret".into()
        }
        fn https(&self, _registry: &str) -> bool {
            false
        }
        fn is_own(&self, _registry: &str) -> bool {
            self.own
        }
    }

    /// A registry that answers 404 to everything and keeps each request's
    /// head.
    async fn recording_registry() -> (String, Arc<Mutex<Vec<String>>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let mut buf = vec![0u8; 8192];
                let n = conn.read(&mut buf).await.unwrap_or(0);
                kept.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase());
                let _ = conn
                    .write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    )
                    .await;
            }
        });
        (addr, seen)
    }

    fn deployment(image: &str) -> Deployment {
        Deployment {
            id: "dep_1".into(),
            app_id: "app_1".into(),
            org_id: "org_1".into(),
            status: "live".into(),
            cause: "deploy".into(),
            source_type: "image".into(),
            image: Some(image.into()),
            digest: Some(format!("sha256:{}", "0".repeat(64))),
            component: None,
            reason: None,
            created_at: 0,
            live_at: None,
            finished_at: None,
            repo: None,
            branch: None,
            upload_id: None,
            build_log: None,
        }
    }

    /// Fetches from a recording registry; answers what it was sent.
    async fn sent(own: bool) -> Vec<String> {
        let (addr, seen) = recording_registry().await;
        let images = tempfile::tempdir().unwrap();
        let d = deployment(&format!("{addr}/org_1/web:1"));
        let fetched = fetch(&Pull { own }, images.path(), "org_1", &d, "sha256:x").await;
        assert!(fetched.is_err(), "the registry has nothing");
        let seen = seen.lock().unwrap().clone();
        assert!(!seen.is_empty(), "the registry was asked");
        seen
    }

    #[tokio::test]
    async fn the_host_bearer_never_reaches_a_registry_not_its_own() {
        // The attack: an image from a registry the operator allows, fetched
        // by a runner that lacks it. Nothing of the host's credential goes.
        let foreign = sent(false).await;
        assert!(
            foreign.iter().all(|r| !r.contains("host-bearer-secret")),
            "{foreign:?}"
        );
        // This platform's registry gets it: the test can see a bearer.
        let own = sent(true).await;
        assert!(
            own.iter().any(|r| r.contains("host-bearer-secret")),
            "{own:?}"
        );
    }
}
