//! Linux images made on the spot and pushed over the OCI distribution
//! protocol to a server's registry: a busybox rootfs (Debian's
//! busybox-static) whose `httpd` answers `$GREETING <version>` on `$PORT`,
//! pushed over HTTP here or by skopeo from an OCI layout.
//! The apps tests deploy it; the apps bench measures it.

use std::io::Write as _;

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

const BUSYBOX: &str = "/bin/busybox";
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";

pub fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// One gzip layer: `/bin/busybox` and `/bin/sh` linking to it.
pub fn busybox_layer() -> Vec<u8> {
    busybox_layer_with(&[])
}

/// [`busybox_layer`] with `files` besides (path in the image, bytes;
/// executable).
pub fn busybox_layer_with(files: &[(&str, &[u8])]) -> Vec<u8> {
    busybox_layer_with_links(files, &[])
}

/// [`busybox_layer_with`] and symbolic `links` (path in the image,
/// target as written).
pub fn busybox_layer_with_links(files: &[(&str, &[u8])], links: &[(&str, &str)]) -> Vec<u8> {
    let busybox = std::fs::read(BUSYBOX)
        .unwrap_or_else(|e| panic!("{BUSYBOX}: {e}; install the busybox-static package"));
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut b = tar::Builder::new(gz);
    let mut dir = tar::Header::new_gnu();
    dir.set_entry_type(tar::EntryType::Directory);
    dir.set_mode(0o755);
    dir.set_size(0);
    b.append_data(&mut dir, "bin/", &[][..]).unwrap();
    for (path, bytes) in [("bin/busybox", &busybox[..])]
        .into_iter()
        .chain(files.iter().copied())
    {
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o755);
        h.set_size(bytes.len() as u64);
        b.append_data(&mut h, path, bytes).unwrap();
    }
    let mut l = tar::Header::new_gnu();
    l.set_entry_type(tar::EntryType::Symlink);
    l.set_size(0);
    b.append_link(&mut l, "bin/sh", "busybox").unwrap();
    for (path, target) in links {
        let mut l = tar::Header::new_gnu();
        l.set_entry_type(tar::EntryType::Symlink);
        l.set_size(0);
        b.append_link(&mut l, path, target).unwrap();
    }
    let mut gz = b.into_inner().unwrap();
    gz.flush().unwrap();
    gz.finish().unwrap()
}

/// The image config: busybox httpd serving `$GREETING <version>` on `$PORT`.
pub fn busybox_httpd_config(version: &str) -> Vec<u8> {
    let script = format!(
        "mkdir /tmp/www && echo \"$GREETING {version}\" > /tmp/www/index.html \
         && echo started {version} && exec httpd -f -v -p $PORT -h /tmp/www"
    );
    serde_json::to_vec(&json!({
        "architecture": "amd64",
        "os": "linux",
        "config": { "Cmd": ["/bin/sh", "-c", script], "Env": ["IMAGE=busybox"] },
        "rootfs": { "type": "layers", "diff_ids": [] },
    }))
    .unwrap()
}

/// Pushes to the registry of the server at `base` (`http://host:port`)
/// with an API token as the Basic password.
pub struct ImagePusher {
    base: String,
    token: String,
    http: reqwest::Client,
}

impl ImagePusher {
    pub fn new(base: &str, token: &str) -> ImagePusher {
        ImagePusher {
            base: base.to_owned(),
            token: token.to_owned(),
            http: reqwest::Client::new(),
        }
    }

    /// Uploads `bytes` as a blob of `repo` in one request; its digest.
    pub async fn blob(&self, repo: &str, bytes: &[u8]) -> String {
        let digest = sha256(bytes);
        let r = self
            .http
            .post(format!(
                "{}/v2/{repo}/blobs/uploads/?digest={digest}",
                self.base
            ))
            .basic_auth("plateau", Some(&self.token))
            .body(bytes.to_vec())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
        digest
    }

    /// Puts `body` as manifest `repo:tag`; the bytes sent.
    pub async fn manifest(&self, repo: &str, tag: &str, media_type: &str, body: &Value) -> Vec<u8> {
        let bytes = serde_json::to_vec(body).unwrap();
        let r = self
            .http
            .put(format!("{}/v2/{repo}/manifests/{tag}", self.base))
            .basic_auth("plateau", Some(&self.token))
            .header("content-type", media_type)
            .body(bytes.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
        bytes
    }

    /// Pushes the busybox httpd image of `version` as `repo:tag` (one
    /// `layer`), behind an index naming it for linux/amd64 when `index`;
    /// returns the reference `host:port/repo:tag`.
    pub async fn push_busybox(
        &self,
        repo: &str,
        tag: &str,
        version: &str,
        layer: &[u8],
        index: bool,
    ) -> String {
        let config = busybox_httpd_config(version);
        self.push_image(repo, tag, &config, layer, index).await
    }

    /// Pushes an image of `config` and one `layer` as `repo:tag`, behind
    /// an index naming it for linux/amd64 when `index`; returns the
    /// reference `host:port/repo:tag`.
    pub async fn push_image(
        &self,
        repo: &str,
        tag: &str,
        config: &[u8],
        layer: &[u8],
        index: bool,
    ) -> String {
        let config_digest = self.blob(repo, config).await;
        let layer_digest = self.blob(repo, layer).await;
        let manifest = json!({
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": { "mediaType": "application/vnd.oci.image.config.v1+json",
                        "digest": config_digest, "size": config.len() },
            "layers": [{ "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                         "digest": layer_digest, "size": layer.len() }],
        });
        let manifest_tag = if index {
            format!("{tag}-amd64")
        } else {
            tag.to_owned()
        };
        let bytes = self
            .manifest(repo, &manifest_tag, OCI_MANIFEST, &manifest)
            .await;
        if index {
            let index = json!({
                "schemaVersion": 2,
                "mediaType": OCI_INDEX,
                "manifests": [{ "mediaType": OCI_MANIFEST, "digest": sha256(&bytes),
                                "size": bytes.len(),
                                "platform": { "architecture": "amd64", "os": "linux" } }],
            });
            self.manifest(repo, tag, OCI_INDEX, &index).await;
        }
        let host = self.base.trim_start_matches("http://");
        format!("{host}/{repo}:{tag}")
    }

    /// Pushes the busybox httpd image of `version` (one `layer`, one
    /// manifest) as `repo:tag` with skopeo, as a user would: an OCI image
    /// layout written to a temporary directory, then `skopeo copy`.
    /// Returns the reference `host:port/repo:tag`.
    pub async fn skopeo_push_busybox(
        &self,
        repo: &str,
        tag: &str,
        version: &str,
        layer: &[u8],
    ) -> String {
        let dir = tempfile::tempdir().unwrap();
        let blobs = dir.path().join("blobs/sha256");
        std::fs::create_dir_all(&blobs).unwrap();
        let blob = |bytes: &[u8]| {
            let digest = sha256(bytes);
            std::fs::write(blobs.join(&digest["sha256:".len()..]), bytes).unwrap();
            digest
        };
        let config = busybox_httpd_config(version);
        let manifest = serde_json::to_vec(&json!({
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": { "mediaType": "application/vnd.oci.image.config.v1+json",
                        "digest": blob(&config), "size": config.len() },
            "layers": [{ "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                         "digest": blob(layer), "size": layer.len() }],
        }))
        .unwrap();
        let index = json!({
            "schemaVersion": 2,
            "manifests": [{ "mediaType": OCI_MANIFEST, "digest": blob(&manifest),
                            "size": manifest.len(),
                            "annotations": { "org.opencontainers.image.ref.name": tag } }],
        });
        std::fs::write(dir.path().join("index.json"), index.to_string()).unwrap();
        std::fs::write(
            dir.path().join("oci-layout"),
            r#"{"imageLayoutVersion":"1.0.0"}"#,
        )
        .unwrap();
        let reference = format!("{}/{repo}:{tag}", self.base.trim_start_matches("http://"));
        let out = tokio::process::Command::new("skopeo")
            .args(["copy", "--dest-tls-verify=false", "--dest-creds"])
            .arg(format!("plateau:{}", self.token))
            .arg(format!("oci:{}:{tag}", dir.path().display()))
            .arg(format!("docker://{reference}"))
            .output()
            .await
            .expect("skopeo runs (install the skopeo package)");
        assert!(
            out.status.success(),
            "skopeo copy: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        reference
    }
}
