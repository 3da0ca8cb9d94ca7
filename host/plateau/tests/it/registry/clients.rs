//! Real OCI clients against the running server: skopeo copies a
//! multi-platform image index in and out, the `oras` Python package
//! pushes an artifact with a `subject`, and the `oci-client` crate pushes,
//! pulls and lists referrers. Everything round-trips byte for byte.

use std::path::Path;
use std::process::Command;

use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use plateau_testkit::Backend;
use reqwest::Method;
use serde_json::{Value, json};

use super::{OCI_INDEX, OCI_MANIFEST, Reg, require_tool, sha256};

crate::on_both_backends!(
    skopeo_round_trips_an_image_index,
    oras_artifact_with_subject,
    oci_client_push_pull_referrers
);

/// Writes `bytes` as a blob of an OCI layout; returns its descriptor.
fn layout_blob(dir: &Path, media_type: &str, bytes: &[u8]) -> Value {
    let digest = sha256(bytes);
    let path = dir
        .join("blobs/sha256")
        .join(digest.trim_start_matches("sha256:"));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
    json!({ "mediaType": media_type, "digest": digest, "size": bytes.len() })
}

fn skopeo(args: &[&str]) {
    let out = Command::new("skopeo")
        .arg("--insecure-policy")
        .args(args)
        .output()
        .expect("skopeo runs");
    assert!(
        out.status.success(),
        "skopeo {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

async fn skopeo_round_trips_an_image_index(backend: Backend) {
    require_tool("skopeo", "apt-get install -y skopeo");
    let reg = Reg::start(backend).await;
    let token = reg.token(&["registry:write"]).await;
    let src = tempfile::tempdir().unwrap();
    let mut platforms = Vec::new();
    for (arch, fill) in [("amd64", 1u8), ("arm64", 2u8)] {
        let config = serde_json::to_vec(&json!({ "architecture": arch, "os": "linux", "rootfs": { "type": "layers", "diff_ids": [] } })).unwrap();
        let layer: Vec<u8> = (0..300_000u32)
            .map(|i| (i as u8).wrapping_mul(fill))
            .collect();
        let config = layout_blob(
            src.path(),
            "application/vnd.oci.image.config.v1+json",
            &config,
        );
        let layer = layout_blob(src.path(), "application/vnd.oci.image.layer.v1.tar", &layer);
        let manifest = serde_json::to_vec(&json!({ "schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": config, "layers": [layer] })).unwrap();
        let mut d = layout_blob(src.path(), OCI_MANIFEST, &manifest);
        d["platform"] = json!({ "architecture": arch, "os": "linux" });
        platforms.push(d);
    }
    let index = serde_json::to_vec(
        &json!({ "schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": platforms }),
    )
    .unwrap();
    let mut top = layout_blob(src.path(), OCI_INDEX, &index);
    top["annotations"] = json!({ "org.opencontainers.image.ref.name": "v1" });
    std::fs::write(
        src.path().join("index.json"),
        serde_json::to_vec(&json!({ "schemaVersion": 2, "manifests": [top] })).unwrap(),
    )
    .unwrap();
    std::fs::write(
        src.path().join("oci-layout"),
        br#"{"imageLayoutVersion":"1.0.0"}"#,
    )
    .unwrap();
    let repo = reg.repo("multi/arch");
    let remote = format!("docker://{}/{repo}:v1", reg.host);
    let creds = format!("plateau:{token}");
    skopeo(&[
        "copy",
        "--all",
        "--preserve-digests",
        "--dest-tls-verify=false",
        "--dest-creds",
        &creds,
        &format!("oci:{}:v1", src.path().display()),
        &remote,
    ]);
    let r = reg
        .req(
            Method::GET,
            &format!("/v2/{repo}/manifests/v1"),
            Some(&token),
        )
        .header("accept", OCI_INDEX)
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["content-type"], OCI_INDEX);
    assert_eq!(
        r.bytes().await.unwrap().as_ref(),
        index.as_slice(),
        "the index is stored byte for byte"
    );
    let dst = tempfile::tempdir().unwrap();
    skopeo(&[
        "copy",
        "--all",
        "--preserve-digests",
        "--src-tls-verify=false",
        "--src-creds",
        &creds,
        &remote,
        &format!("oci:{}:v1", dst.path().display()),
    ]);
    let blobs = |dir: &Path| {
        let mut all: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir.join("blobs/sha256"))
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        all.sort();
        all
    };
    assert_eq!(
        blobs(dst.path()),
        blobs(src.path()),
        "every blob and manifest round-trips"
    );
}

const ORAS_SCRIPT: &str = r#"
import json, sys, os
import oras.provider, oras.oci
host, token, repo, workdir, subject_digest, subject_size = sys.argv[1:7]
os.chdir(workdir)
reg = oras.provider.Registry(hostname=host, insecure=True, tls_verify=False)
reg.auth.set_basic_auth("plateau", token)
subject = oras.oci.Subject(mediaType="application/vnd.oci.image.manifest.v1+json", digest=subject_digest, size=int(subject_size))
pushed = reg.push(target=f"{host}/{repo}:sbom", files=["sbom.json"],
                  manifest_config="config.json:application/vnd.plateau.sbom.v1+json",
                  manifest_annotations={"org.example.kind": "sbom"}, subject=subject,
                  disable_path_validation=True, quiet=True)
files = reg.pull(target=f"{host}/{repo}:sbom", outdir="out")
print(json.dumps({"status": pushed.status_code, "files": files}))
"#;

async fn oras_artifact_with_subject(backend: Backend) {
    require_tool("python3", "install Python 3");
    let has_oras = Command::new("python3")
        .args(["-c", "import oras"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        has_oras,
        "the oras Python package is required: pip install oras"
    );
    let reg = Reg::start(backend).await;
    let token = reg.token(&["registry:write"]).await;
    let repo = reg.repo("with-sbom");
    let (image, image_digest) = reg
        .push_image(&token, &repo, "v1", b"the image layer")
        .await;
    let work = tempfile::tempdir().unwrap();
    let sbom = br#"{"spdxVersion":"SPDX-2.3","name":"plateau test"}"#;
    std::fs::write(work.path().join("sbom.json"), sbom).unwrap();
    std::fs::write(work.path().join("config.json"), b"{}").unwrap();
    let out = Command::new("python3")
        .args(["-c", ORAS_SCRIPT, &reg.host, &token, &repo])
        .arg(work.path())
        .args([&image_digest, &image.len().to_string()])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "oras: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(
        out.stdout
            .split(|b| *b == b'\n')
            .rfind(|l| !l.is_empty())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(report["status"], 201);
    assert_eq!(
        std::fs::read(work.path().join("out/sbom.json")).unwrap(),
        sbom,
        "byte for byte"
    );
    // Found again through the referrers API, filtered by artifact type.
    let url = format!(
        "/v2/{repo}/referrers/{image_digest}?artifactType=application/vnd.plateau.sbom.v1%2Bjson"
    );
    let r = reg
        .req(Method::GET, &url, Some(&token))
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["oci-filters-applied"], "artifactType");
    assert_eq!(r.headers()["content-type"], OCI_INDEX);
    let index: Value = r.json().await.unwrap();
    let found = index["manifests"].as_array().unwrap();
    assert_eq!(found.len(), 1, "{index}");
    assert_eq!(
        found[0]["artifactType"],
        "application/vnd.plateau.sbom.v1+json"
    );
    assert_eq!(found[0]["annotations"]["org.example.kind"], "sbom");
    let r = reg
        .req(
            Method::GET,
            &format!("/v2/{repo}/referrers/{image_digest}?artifactType=other/type"),
            Some(&token),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.json::<Value>().await.unwrap()["manifests"], json!([]));
}

fn oci_client() -> Client {
    Client::new(ClientConfig {
        protocol: ClientProtocol::Http,
        ..ClientConfig::default()
    })
}

async fn oci_client_push_pull_referrers(backend: Backend) {
    let reg = Reg::start(backend).await;
    let token = reg.token(&["registry:write"]).await;
    let auth = RegistryAuth::Basic("plateau".to_owned(), token.clone());
    let client = oci_client();
    let image: Reference = format!("{}/{}:v1", reg.host, reg.repo("rust/app"))
        .parse()
        .unwrap();
    let layer: Vec<u8> = (0..2_000_000u32).map(|i| (i % 253) as u8).collect();
    let layers = vec![ImageLayer::new(
        layer.clone(),
        "application/vnd.oci.image.layer.v1.tar".to_owned(),
        None,
    )];
    let config = Config::new(
        br#"{"architecture":"wasm","os":"wasip2"}"#.to_vec(),
        "application/vnd.wasm.config.v0+json".to_owned(),
        None,
    );
    let pushed = client
        .push(&image, &layers, config, &auth, None)
        .await
        .expect("oci-client pushes");
    let pulled = client
        .pull(
            &image,
            &auth,
            vec!["application/vnd.oci.image.layer.v1.tar"],
        )
        .await
        .expect("oci-client pulls");
    assert_eq!(
        pulled.layers[0].data.as_ref(),
        layer.as_slice(),
        "byte for byte"
    );
    let (raw, digest) = client
        .pull_manifest_raw(&image, &auth, &[OCI_MANIFEST])
        .await
        .unwrap();
    assert_eq!(digest, sha256(&raw));
    assert!(pushed.manifest_url.contains(&digest));
    // An artifact whose subject is the image, pushed by digest.
    let signature = b"signature bytes".to_vec();
    let sig_ref: Reference = format!("{}/{}:sig", reg.host, reg.repo("rust/app"))
        .parse()
        .unwrap();
    let sig_layers = vec![ImageLayer::new(
        signature.clone(),
        "application/vnd.example.signature".to_owned(),
        None,
    )];
    let empty = Config::new(
        b"{}".to_vec(),
        "application/vnd.oci.empty.v1+json".to_owned(),
        None,
    );
    let mut manifest = OciImageManifest::build(&sig_layers, &empty, None);
    manifest.artifact_type = Some("application/vnd.example.signature.v1".to_owned());
    manifest.subject = Some(OciDescriptor {
        media_type: OCI_MANIFEST.to_owned(),
        digest: digest.clone(),
        size: raw.len() as i64,
        ..OciDescriptor::default()
    });
    client
        .push(&sig_ref, &sig_layers, empty, &auth, Some(manifest))
        .await
        .expect("pushes the artifact");
    let image_by_digest: Reference = format!("{}/{}@{digest}", reg.host, reg.repo("rust/app"))
        .parse()
        .unwrap();
    let referrers = client
        .pull_referrers(
            &image_by_digest,
            Some("application/vnd.example.signature.v1"),
        )
        .await
        .expect("lists referrers");
    assert_eq!(referrers.manifests.len(), 1);
    assert_eq!(
        referrers.manifests[0].artifact_type.as_deref(),
        Some("application/vnd.example.signature.v1")
    );
    let by_digest: Reference = format!(
        "{}/{}@{}",
        reg.host,
        reg.repo("rust/app"),
        referrers.manifests[0].digest
    )
    .parse()
    .unwrap();
    let sig = client
        .pull(&by_digest, &auth, vec!["application/vnd.example.signature"])
        .await
        .unwrap();
    assert_eq!(sig.layers[0].data.as_ref(), signature.as_slice());
}
