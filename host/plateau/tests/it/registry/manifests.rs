//! The distribution API's manifests spoken directly: content negotiation,
//! tags and catalog pages, deletes and their events, and every error code
//! the registry answers with.

use plateau_testkit::Backend;
use reqwest::Method;

use super::{OCI_INDEX, OCI_MANIFEST, Reg, code_of, image_manifest};

crate::on_both_backends!(manifests_tags_and_catalog, error_codes);

async fn manifests_tags_and_catalog(backend: Backend) {
    let reg = Reg::start(backend).await;
    let token = reg.token(&["registry:write"]).await;
    let repo = reg.repo("app");
    let (manifest, digest) = reg.push_image(&token, &repo, "v1", b"layer one").await;
    for tag in ["v2", "a", "B", "latest"] {
        let (status, _) = reg
            .put_manifest(&token, &repo, tag, OCI_MANIFEST, &manifest)
            .await;
        assert_eq!(status, 201);
    }
    // By tag and by digest, byte for byte.
    for reference in ["v1", digest.as_str()] {
        let r = reg
            .req(
                Method::GET,
                &format!("/v2/{repo}/manifests/{reference}"),
                Some(&token),
            )
            .header("accept", OCI_MANIFEST)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["content-type"], OCI_MANIFEST);
        assert_eq!(r.headers()["docker-content-digest"], digest.as_str());
        assert_eq!(r.bytes().await.unwrap().as_ref(), manifest.as_slice());
    }
    let r = reg
        .req(
            Method::HEAD,
            &format!("/v2/{repo}/manifests/v1"),
            Some(&token),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        (
            r.status().as_u16(),
            r.headers()["content-length"].to_str().unwrap()
        ),
        (200, manifest.len().to_string().as_str())
    );
    // A client that accepts only indexes does not get an image manifest.
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
    assert_eq!(
        (
            r.status().as_u16(),
            code_of(&r.bytes().await.unwrap()).as_str()
        ),
        (404, "MANIFEST_UNKNOWN")
    );
    // Tags in byte order, paginated with a Link header.
    let r = reg
        .req(Method::GET, &format!("/v2/{repo}/tags/list"), Some(&token))
        .send()
        .await
        .unwrap();
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(
        body["tags"],
        serde_json::json!(["B", "a", "latest", "v1", "v2"])
    );
    let r = reg
        .req(
            Method::GET,
            &format!("/v2/{repo}/tags/list?n=2"),
            Some(&token),
        )
        .send()
        .await
        .unwrap();
    let link = r.headers()["link"].to_str().unwrap().to_owned();
    assert_eq!(
        link,
        format!("</v2/{repo}/tags/list?n=2&last=a>; rel=\"next\"")
    );
    assert_eq!(
        r.json::<serde_json::Value>().await.unwrap()["tags"],
        serde_json::json!(["B", "a"])
    );
    let r = reg
        .req(
            Method::GET,
            &format!("/v2/{repo}/tags/list?n=2&last=latest"),
            Some(&token),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.json::<serde_json::Value>().await.unwrap()["tags"],
        serde_json::json!(["v1", "v2"])
    );
    let r = reg
        .req(
            Method::GET,
            &format!("/v2/{repo}/tags/list?n=0"),
            Some(&token),
        )
        .send()
        .await
        .unwrap();
    assert!(r.headers().get("link").is_none());
    // Catalog of the organisation.
    reg.push_image(&token, &reg.repo("zeta"), "1", b"z").await;
    let r = reg
        .req(Method::GET, "/v2/_catalog?n=1", Some(&token))
        .send()
        .await
        .unwrap();
    assert!(r.headers()["link"].to_str().unwrap().contains("last="));
    let r = reg
        .req(Method::GET, "/v2/_catalog", Some(&token))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.json::<serde_json::Value>().await.unwrap()["repositories"],
        serde_json::json!([repo, reg.repo("zeta")])
    );
    // Tag deletion, then manifest deletion.
    assert_eq!(
        reg.req(
            Method::DELETE,
            &format!("/v2/{repo}/manifests/a"),
            Some(&token)
        )
        .send()
        .await
        .unwrap()
        .status(),
        202
    );
    assert_eq!(
        reg.req(
            Method::GET,
            &format!("/v2/{repo}/manifests/a"),
            Some(&token)
        )
        .send()
        .await
        .unwrap()
        .status(),
        404
    );
    assert_eq!(
        reg.req(
            Method::DELETE,
            &format!("/v2/{repo}/manifests/{digest}"),
            Some(&token)
        )
        .send()
        .await
        .unwrap()
        .status(),
        202
    );
    for reference in ["v1", digest.as_str()] {
        let r = reg
            .req(
                Method::GET,
                &format!("/v2/{repo}/manifests/{reference}"),
                Some(&token),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404);
    }
    // Pushes and deletes are in the timeline.
    let events = reg.server.client().get("/events?type=registry.*").await;
    let kinds: Vec<String> = events.json()["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        kinds.contains(&"registry.manifest.pushed".to_owned()),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&"registry.manifest.deleted".to_owned()),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&"registry.tag.deleted".to_owned()),
        "{kinds:?}"
    );
}

/// A request: method, path, body, headers.
type Case = (Method, String, Vec<u8>, Vec<(&'static str, String)>);

async fn error_codes(backend: Backend) {
    let reg = Reg::start(backend).await;
    let token = reg.token(&["registry:write"]).await;
    let repo = reg.repo("errors");
    let zero = format!("sha256:{}", "0".repeat(64));
    let config = reg.push_blob(&token, &repo, b"{}").await;
    let send =
        |method: Method, path: String, body: Vec<u8>, headers: Vec<(&'static str, String)>| {
            let mut b = reg.req(method, &path, Some(&token)).body(body);
            for (k, v) in headers {
                b = b.header(k, v);
            }
            async move {
                let r = b.send().await.unwrap();
                let status = r.status().as_u16();
                (status, code_of(&r.bytes().await.unwrap()))
            }
        };
    let upload = || async {
        let r = reg
            .req(
                Method::POST,
                &format!("/v2/{repo}/blobs/uploads/"),
                Some(&token),
            )
            .send()
            .await
            .unwrap();
        r.headers()["location"].to_str().unwrap().to_owned()
    };
    let cases: Vec<((u16, &str), Case)> = vec![
        ((404, "BLOB_UNKNOWN"), (Method::GET, format!("/v2/{repo}/blobs/{zero}"), vec![], vec![])),
        ((400, "DIGEST_INVALID"), (Method::GET, format!("/v2/{repo}/blobs/sha256:nothex"), vec![], vec![])),
        ((400, "UNSUPPORTED"), (Method::POST, format!("/v2/{repo}/blobs/uploads/?digest-algorithm=md5"), vec![], vec![])),
        ((400, "DIGEST_INVALID"), (Method::POST, format!("/v2/{repo}/blobs/uploads/?digest={zero}"), b"abc".to_vec(), vec![])),
        ((404, "BLOB_UPLOAD_UNKNOWN"), (Method::PATCH, format!("/v2/{repo}/blobs/uploads/nope"), b"abc".to_vec(), vec![])),
        ((400, "BLOB_UPLOAD_INVALID"), (Method::PUT, upload().await, vec![], vec![])),
        ((400, "BLOB_UPLOAD_INVALID"), (Method::PATCH, upload().await, b"abc".to_vec(), vec![("content-range", "zero-two".into())])),
        ((400, "SIZE_INVALID"), (Method::PATCH, upload().await, b"abc".to_vec(), vec![("content-range", "0-9".into())])),
        ((416, "BLOB_UPLOAD_INVALID"), (Method::PATCH, upload().await, b"abc".to_vec(), vec![("content-range", "5-7".into())])),
        ((400, "NAME_INVALID"), (Method::GET, format!("/v2/{}/UPPER/tags/list", reg.org), vec![], vec![])),
        ((400, "NAME_INVALID"), (Method::GET, format!("/v2/{}/manifests/latest", reg.org), vec![], vec![])),
        ((404, "NAME_UNKNOWN"), (Method::GET, format!("/v2/{}/never-pushed/tags/list", reg.org), vec![], vec![])),
        ((404, "NAME_UNKNOWN"), (Method::GET, "/v2/library/ubuntu/manifests/latest".into(), vec![], vec![])),
        ((404, "MANIFEST_UNKNOWN"), (Method::GET, format!("/v2/{repo}/manifests/nope"), vec![], vec![])),
        ((400, "MANIFEST_INVALID"), (Method::PUT, format!("/v2/{repo}/manifests/x"), b"{not json".to_vec(), vec![("content-type", OCI_MANIFEST.into())])),
        ((400, "MANIFEST_INVALID"), (Method::PUT, format!("/v2/{repo}/manifests/x"), br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}"#.to_vec(), vec![("content-type", OCI_MANIFEST.into())])),
        ((400, "MANIFEST_BLOB_UNKNOWN"), (Method::PUT, format!("/v2/{repo}/manifests/x"), image_manifest(&config, 2, &zero, 3), vec![("content-type", OCI_MANIFEST.into())])),
        ((400, "SIZE_INVALID"), (Method::PUT, format!("/v2/{repo}/manifests/x"), image_manifest(&config, 5, &config, 2), vec![("content-type", OCI_MANIFEST.into())])),
        ((400, "DIGEST_INVALID"), (Method::PUT, format!("/v2/{repo}/manifests/{zero}"), image_manifest(&config, 2, &config, 2), vec![("content-type", OCI_MANIFEST.into())])),
        ((413, "SIZE_INVALID"), (Method::PUT, format!("/v2/{repo}/manifests/big"), vec![b' '; 5 * 1024 * 1024], vec![("content-type", OCI_MANIFEST.into())])),
        ((404, "MANIFEST_UNKNOWN"), (Method::DELETE, format!("/v2/{repo}/manifests/{zero}"), vec![], vec![])),
        ((404, "BLOB_UNKNOWN"), (Method::DELETE, format!("/v2/{repo}/blobs/{zero}"), vec![], vec![])),
        ((405, "UNSUPPORTED"), (Method::POST, format!("/v2/{repo}/tags/list"), vec![], vec![])),
        ((404, "UNSUPPORTED"), (Method::GET, "/v2/nothing-here".into(), vec![], vec![])),
    ];
    for (expected, (method, path, body, headers)) in cases {
        let what = format!("{method} {path}");
        assert_eq!(
            send(method, path, body, headers).await,
            (expected.0, expected.1.to_owned()),
            "{what}"
        );
    }
    // An index whose manifests are missing.
    let index = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2, "mediaType": OCI_INDEX,
        "manifests": [{ "mediaType": OCI_MANIFEST, "digest": zero, "size": 10 }]
    }))
    .unwrap();
    assert_eq!(
        reg.put_manifest(&token, &repo, "idx", OCI_INDEX, &index)
            .await,
        (400, "MANIFEST_BLOB_UNKNOWN".to_owned())
    );
    // Too many uploads at once.
    let limited = Reg::start_with(
        plateau_testkit::ServerOptions::new(backend).env("PLATEAU_REGISTRY_MAX_UPLOADS", "1"),
    )
    .await;
    let t = limited.token(&["registry:write"]).await;
    let path = format!("/v2/{}/blobs/uploads/", limited.repo("r"));
    assert_eq!(
        limited
            .req(Method::POST, &path, Some(&t))
            .send()
            .await
            .unwrap()
            .status(),
        202
    );
    let r = limited
        .req(Method::POST, &path, Some(&t))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 429);
    assert!(r.headers().contains_key("retry-after"));
    assert_eq!(code_of(&r.bytes().await.unwrap()), "TOOMANYREQUESTS");
}
