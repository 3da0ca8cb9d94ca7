//! Pulls that must fail, each with a clear error and nothing loaded: an
//! unknown tag, artifacts that are not Wasm plugins, a registry that sends
//! other bytes than the digests promise, missing credentials, plain HTTP
//! not allowed, and a malformed reference.

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use plateau_plugin_artifacts::fixtures;
use plateau_testkit::Backend;
use serde_json::{Value, json};

use super::Env;
use crate::registry::{OCI_MANIFEST, sha256};

crate::on_both_backends!(failed_pulls_are_clear_and_load_nothing);

/// A Wasm plugin manifest whose layer is `layer` (by digest and size).
fn wasm_manifest(config_digest: &str, layer_media_type: &str, layer: &[u8]) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": { "mediaType": "application/vnd.wasm.config.v0+json", "digest": config_digest, "size": 2 },
        "layers": [{ "mediaType": layer_media_type, "digest": sha256(layer), "size": layer.len() }]
    }))
    .unwrap()
}

/// A registry on a free port that lies: it answers every manifest request
/// with `manifest`, whatever digest was asked for, and every blob request
/// with `blob`. Returns its `host:port`.
async fn lying_registry(manifest: Vec<u8>, blob: Vec<u8>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new().fallback(move |uri: axum::http::Uri| {
        let (manifest, blob) = (manifest.clone(), blob.clone());
        async move {
            let path = uri.path();
            if path == "/v2/" {
                StatusCode::OK.into_response()
            } else if path.contains("/manifests/") {
                ([(header::CONTENT_TYPE, OCI_MANIFEST)], manifest).into_response()
            } else if path.contains("/blobs/") {
                blob.into_response()
            } else {
                StatusCode::NOT_FOUND.into_response()
            }
        }
    });
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr.to_string()
}

/// Asserts a problem with `status` and `code` whose detail contains `needle`.
fn assert_problem(r: &plateau_testkit::Response, status: u16, code: &str, needle: &str) {
    assert_eq!(
        (r.status, r.code().as_str()),
        (status, code),
        "{}",
        r.text()
    );
    let detail = r.json()["detail"].as_str().unwrap_or_default().to_owned();
    assert!(detail.contains(needle), "{needle:?} not in {detail:?}");
}

async fn failed_pulls_are_clear_and_load_nothing(backend: Backend) {
    let env = Env::start(backend).await;
    let reg = &env.reg;
    env.push(fixtures::ECHO, &env.reference("plugins/echo:v1"))
        .await;

    // An unknown tag.
    let r = env
        .api_load(
            "echo",
            env.by_reference(&env.reference("plugins/echo:v9"), true),
        )
        .await;
    assert_problem(&r, 422, "oci_reference_unknown", "v9");

    // A container image, not a Wasm artifact.
    let image = reg.repo("plugins/image");
    reg.push_image(&env.writer, &image, "v1", b"a tar layer")
        .await;
    let r = env
        .api_load(
            "echo",
            env.by_reference(&env.reference("plugins/image:v1"), true),
        )
        .await;
    assert_problem(
        &r,
        422,
        "oci_not_a_plugin",
        "application/vnd.oci.image.config.v1+json",
    );

    // The Wasm config, but a tar layer.
    let repo = reg.repo("plugins/tarred");
    let config = reg.push_blob(&env.writer, &repo, b"{}").await;
    let tar = b"not a component".to_vec();
    reg.push_blob(&env.writer, &repo, &tar).await;
    let manifest = wasm_manifest(&config, "application/vnd.oci.image.layer.v1.tar", &tar);
    let (status, code) = reg
        .put_manifest(&env.writer, &repo, "v1", OCI_MANIFEST, &manifest)
        .await;
    assert_eq!(status, 201, "{code}");
    let r = env
        .api_load(
            "echo",
            env.by_reference(&env.reference("plugins/tarred:v1"), true),
        )
        .await;
    assert_problem(&r, 422, "oci_not_a_plugin", "layer media type");

    // A registry that serves a manifest other than the pinned digest, and a
    // layer other than the one its manifest names.
    let mut tampered = fixtures::ECHO.to_vec();
    let last = tampered.len() - 1;
    tampered[last] ^= 0xff;
    let manifest = wasm_manifest(&sha256(b"{}"), "application/wasm", fixtures::ECHO);
    let liar = lying_registry(manifest.clone(), tampered).await;
    let zero = format!("sha256:{}", "0".repeat(64));
    let r = env
        .api_load(
            "echo",
            env.by_reference(&format!("{liar}/lies/echo@{zero}"), true),
        )
        .await;
    assert_problem(&r, 422, "oci_digest_mismatch", &zero);
    let r = env
        .api_load(
            "echo",
            env.by_reference(&format!("{liar}/lies/echo:v1"), true),
        )
        .await;
    assert_problem(&r, 422, "oci_digest_mismatch", &sha256(fixtures::ECHO));
    assert!(r.text().contains("layer"), "{}", r.text());

    // No credentials, and credentials that may not pull.
    let tagged = env.reference("plugins/echo:v1");
    let anonymous = json!({ "reference": tagged, "activate": true, "insecure": true });
    let r = env.api_load("echo", anonymous).await;
    assert_problem(&r, 422, "oci_registry_denied", "user name and password");
    let outsider = crate::create_org(&reg.server, "Outsider", "free").await;
    let mut foreign = env.by_reference(&tagged, true);
    foreign["password"] = json!(outsider);
    let r = env.api_load("echo", foreign).await;
    assert_eq!(r.status, 422, "another organisation's token: {}", r.text());

    // Plain HTTP only when asked for.
    let mut https_only = env.by_reference(&tagged, true);
    https_only["insecure"] = json!(false);
    let r = env.api_load("echo", https_only).await;
    assert_problem(&r, 502, "oci_registry_unreachable", "\"insecure\": true");

    // Not a reference at all; and raw bytes that are not a component.
    let r = env
        .api_load("echo", env.by_reference("Not A Reference!", true))
        .await;
    assert_eq!(
        (r.status, r.json()["errors"][0]["field"].as_str()),
        (400, Some("reference")),
        "{}",
        r.text()
    );
    let r = env.api_load("echo", json!({ "activate": true })).await;
    assert_eq!(r.status, 400, "a JSON body needs a reference: {}", r.text());

    // Nothing was loaded: no plugin echo, nothing serves its prefix.
    assert_eq!(env.versions("echo").await, Vec::<Value>::new());
    assert_eq!(reg.server.client().get("/echo/version").await.status, 404);

    // The same artifact loads once the request is right.
    let r = env.api_load("echo", env.by_reference(&tagged, true)).await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        reg.server.client().get("/echo/version").await.text(),
        "1.0.0"
    );
}
