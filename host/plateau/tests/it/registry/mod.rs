//! The container registry under `/v2`: the OCI protocol spoken over plain
//! HTTP, and real, independently written clients (skopeo, the `oras`
//! Python package, the `oci-client` crate) pushing and pulling.

mod auth;
mod blobs;
mod clients;
mod gc;
mod listing;
mod manifests;

use plateau_testkit::oci::ImagePusher;
use plateau_testkit::{Backend, Server, ServerOptions};
use reqwest::{Method, RequestBuilder};
use serde_json::{Value, json};

pub use plateau_testkit::oci::{OCI_INDEX, OCI_MANIFEST, sha256};

/// A running server with its first organisation.
pub struct Reg {
    pub server: Server,
    /// `127.0.0.1:<port>`, as OCI references spell a registry.
    pub host: String,
    pub org: String,
    http: reqwest::Client,
}

impl Reg {
    pub async fn start(backend: Backend) -> Reg {
        Self::start_with(ServerOptions::new(backend)).await
    }

    pub async fn start_with(options: ServerOptions) -> Reg {
        let server = crate::start_with(options).await;
        let me = server.client().get("/me").await;
        assert_eq!(me.status, 200, "{}", me.text());
        let org = me.json()["organization"]["id"].as_str().unwrap().to_owned();
        let host = server.url.trim_start_matches("http://").to_owned();
        Reg {
            server,
            host,
            org,
            http: reqwest::Client::new(),
        }
    }

    /// A token of the first organisation with these scopes.
    pub async fn token(&self, scopes: &[&str]) -> String {
        crate::mint(&self.server, json!({ "scopes": scopes })).await
    }

    pub fn repo(&self, path: &str) -> String {
        format!("{}/{path}", self.org)
    }

    /// A request to `path` (from the server root) with Basic credentials
    /// `plateau:<token>` when a token is given.
    pub fn req(&self, method: Method, path: &str, token: Option<&str>) -> RequestBuilder {
        let url = if path.starts_with("http") {
            path.to_owned()
        } else {
            format!("{}{path}", self.server.url)
        };
        let builder = self.http.request(method, url);
        match token {
            Some(t) => builder.basic_auth("plateau", Some(t)),
            None => builder,
        }
    }

    /// Pushes a blob with a single POST; returns its digest.
    pub async fn push_blob(&self, token: &str, repo: &str, bytes: &[u8]) -> String {
        ImagePusher::new(&self.server.url, token)
            .blob(repo, bytes)
            .await
    }

    /// Pushes a manifest; returns the status and the OCI error code, if any.
    pub async fn put_manifest(
        &self,
        token: &str,
        repo: &str,
        reference: &str,
        media_type: &str,
        body: &[u8],
    ) -> (u16, String) {
        let r = self
            .req(
                Method::PUT,
                &format!("/v2/{repo}/manifests/{reference}"),
                Some(token),
            )
            .header("content-type", media_type)
            .body(body.to_vec())
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, code_of(&r.bytes().await.unwrap()))
    }

    /// A small image (config and one layer) pushed to `repo`; returns the
    /// manifest bytes and digest.
    pub async fn push_image(
        &self,
        token: &str,
        repo: &str,
        tag: &str,
        layer: &[u8],
    ) -> (Vec<u8>, String) {
        let config = br#"{"architecture":"amd64","os":"linux"}"#;
        let config_digest = self.push_blob(token, repo, config).await;
        let layer_digest = self.push_blob(token, repo, layer).await;
        let manifest = image_manifest(&config_digest, config.len(), &layer_digest, layer.len());
        let (status, code) = self
            .put_manifest(token, repo, tag, OCI_MANIFEST, &manifest)
            .await;
        assert_eq!(status, 201, "{code}");
        let digest = sha256(&manifest);
        (manifest, digest)
    }
}

pub fn image_manifest(config: &str, config_size: usize, layer: &str, layer_size: usize) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": { "mediaType": "application/vnd.oci.image.config.v1+json", "digest": config, "size": config_size },
        "layers": [{ "mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer, "size": layer_size }]
    }))
    .unwrap()
}

/// The first OCI error code of a body (empty when there is none).
pub fn code_of(body: &[u8]) -> String {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v["errors"][0]["code"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Fails (never skips) when a client tool is missing.
pub fn require_tool(program: &str, install: &str) {
    let found = std::process::Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "{program} is required for the registry tests: {install}"
    );
}

impl Reg {
    /// A request with Basic credentials of any user name.
    pub fn http_basic(
        &self,
        method: Method,
        path: &str,
        user: &str,
        password: &str,
    ) -> RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.server.url))
            .basic_auth(user, Some(password))
    }
}
