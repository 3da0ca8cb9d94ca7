//! Section 5.7: Basic credentials with the user name `plateau` and an API
//! token, the bearer challenge and token endpoint, every way of being
//! refused, and tenant isolation (another organisation's repositories
//! answer as if they did not exist).

use plateau_testkit::Backend;
use reqwest::Method;
use serde_json::Value;

use super::{Reg, code_of};

crate::on_both_backends!(every_auth_failure_mode, bearer_flow, tenant_isolation);

async fn status_and_code(r: reqwest::Response) -> (u16, String) {
    let status = r.status().as_u16();
    (status, code_of(&r.bytes().await.unwrap()))
}

async fn every_auth_failure_mode(backend: Backend) {
    let reg = Reg::start(backend).await;
    let writer = reg.token(&["registry:write"]).await;
    let repo = reg.repo("private");
    reg.push_image(&writer, &repo, "v1", b"secret layer").await;
    let manifest = format!("/v2/{repo}/manifests/v1");
    // No credentials: 401 with the bearer challenge naming the scope.
    let r = reg.req(Method::GET, &manifest, None).send().await.unwrap();
    let challenge = r.headers()["www-authenticate"].to_str().unwrap().to_owned();
    assert_eq!(status_and_code(r).await, (401, "UNAUTHORIZED".to_owned()));
    assert_eq!(
        challenge,
        format!(
            "Bearer realm=\"{}/v2/token\",service=\"plateau\",scope=\"repository:{repo}:pull\"",
            reg.server.url
        )
    );
    let r = reg.req(Method::PUT, &manifest, None).send().await.unwrap();
    assert!(
        r.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .ends_with(":pull,push\"")
    );
    assert_eq!(
        reg.req(Method::GET, "/v2/", None)
            .send()
            .await
            .unwrap()
            .status(),
        401
    );
    // Wrong user name.
    let r = reg
        .http_basic(Method::GET, &manifest, "admin", &writer)
        .send()
        .await
        .unwrap();
    assert_eq!(status_and_code(r).await, (401, "UNAUTHORIZED".to_owned()));
    // Bad tokens: unknown, malformed, not a token at all.
    for bad in [
        plateau_testkit::random_token(),
        "plt_short".to_owned(),
        "hunter2".to_owned(),
    ] {
        let r = reg
            .req(Method::GET, &manifest, Some(&bad))
            .send()
            .await
            .unwrap();
        assert_eq!(
            status_and_code(r).await,
            (401, "UNAUTHORIZED".to_owned()),
            "{bad}"
        );
    }
    // A token without any registry scope.
    let unrelated = reg.token(&["projects:read"]).await;
    let r = reg
        .req(Method::GET, &manifest, Some(&unrelated))
        .send()
        .await
        .unwrap();
    assert_eq!(status_and_code(r).await, (403, "DENIED".to_owned()));
    let r = reg
        .req(Method::GET, "/v2/token?service=plateau", Some(&unrelated))
        .send()
        .await
        .unwrap();
    assert_eq!(status_and_code(r).await, (403, "DENIED".to_owned()));
    // A read-only token pulls but neither pushes nor deletes.
    let reader = reg.token(&["registry:read"]).await;
    assert_eq!(
        reg.req(Method::GET, &manifest, Some(&reader))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    let r = reg
        .req(
            Method::POST,
            &format!("/v2/{repo}/blobs/uploads/"),
            Some(&reader),
        )
        .send()
        .await
        .unwrap();
    let (status, code) = status_and_code(r).await;
    assert_eq!((status, code.as_str()), (403, "DENIED"));
    let r = reg
        .req(Method::DELETE, &manifest, Some(&reader))
        .send()
        .await
        .unwrap();
    assert_eq!(status_and_code(r).await, (403, "DENIED".to_owned()));
    // A revoked token.
    let tokens = reg.server.client().get("/tokens").await.json();
    let last_id = tokens["items"].as_array().unwrap().last().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        reg.server
            .client()
            .delete(&format!("/tokens/{last_id}"))
            .await
            .status,
        200
    );
    let r = reg
        .req(Method::GET, &manifest, Some(&reader))
        .send()
        .await
        .unwrap();
    assert_eq!(status_and_code(r).await, (401, "UNAUTHORIZED".to_owned()));
}

async fn bearer_flow(backend: Backend) {
    let reg = Reg::start(backend).await;
    let writer = reg.token(&["registry:write"]).await;
    let repo = reg.repo("bearer");
    reg.push_image(&writer, &repo, "v1", b"x").await;
    // Anonymous token requests get a Basic challenge.
    let r = reg
        .req(Method::GET, "/v2/token", None)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert!(
        r.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Basic")
    );
    let r = reg
        .req(
            Method::GET,
            &format!("/v2/token?service=plateau&scope=repository:{repo}:pull,push"),
            Some(&writer),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    let bearer = body["token"].as_str().unwrap().to_owned();
    assert_eq!(body["access_token"], body["token"]);
    let expires_in = body["expires_in"].as_i64().unwrap();
    assert!((1..=300).contains(&expires_in), "{expires_in}");
    assert!(!bearer.starts_with("plt_"), "not an API token");
    let get = |token: String| {
        reg.req(Method::GET, &format!("/v2/{repo}/manifests/v1"), None)
            .bearer_auth(token)
            .send()
    };
    assert_eq!(get(bearer.clone()).await.unwrap().status(), 200);
    // A forged bearer is refused.
    let mut forged = bearer.clone();
    forged.push('x');
    assert_eq!(get(forged).await.unwrap().status(), 401);
    // The bearer is not an API token.
    assert_eq!(
        reg.server
            .anonymous()
            .with_token(&bearer)
            .get("/me")
            .await
            .status,
        401
    );
    // Revoking the API token ends its bearers at once.
    let tokens = reg.server.client().get("/tokens").await.json();
    let id = tokens["items"].as_array().unwrap().last().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        reg.server
            .client()
            .delete(&format!("/tokens/{id}"))
            .await
            .status,
        200
    );
    assert_eq!(get(bearer).await.unwrap().status(), 401);
}

async fn tenant_isolation(backend: Backend) {
    let reg = Reg::start(backend).await;
    let ours = reg.token(&["registry:write"]).await;
    let repo = reg.repo("mine");
    let (_, digest) = reg.push_image(&ours, &repo, "v1", b"our layer").await;
    let layer = super::sha256(b"our layer");
    let theirs = crate::create_org(&reg.server, "other", "pro").await;
    let other_org = reg
        .server
        .anonymous()
        .with_token(&theirs)
        .get("/me")
        .await
        .json()["organization"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let missing = format!("{}/does-not-exist", reg.org);
    for name in [repo.as_str(), missing.as_str()] {
        for (method, path) in [
            (Method::GET, format!("/v2/{name}/manifests/v1")),
            (Method::HEAD, format!("/v2/{name}/manifests/{digest}")),
            (Method::GET, format!("/v2/{name}/blobs/{layer}")),
            (Method::GET, format!("/v2/{name}/tags/list")),
            (Method::GET, format!("/v2/{name}/referrers/{digest}")),
            (Method::POST, format!("/v2/{name}/blobs/uploads/")),
            (Method::DELETE, format!("/v2/{name}/manifests/{digest}")),
        ] {
            let r = reg
                .req(method.clone(), &path, Some(&theirs))
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let body = r.bytes().await.unwrap();
            if method == Method::HEAD {
                assert_eq!(status, 404, "{path}");
            } else {
                assert_eq!(
                    (status, code_of(&body)),
                    (404, "NAME_UNKNOWN".to_owned()),
                    "{method} {path}"
                );
            }
        }
    }
    // Mounting our blob into their repository falls back to an upload.
    let r = reg
        .req(
            Method::POST,
            &format!("/v2/{other_org}/stolen/blobs/uploads/?mount={layer}&from={repo}"),
            Some(&theirs),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let r = reg
        .req(
            Method::GET,
            &format!("/v2/{other_org}/stolen/blobs/{layer}"),
            Some(&theirs),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    // Each catalog shows only its organisation.
    reg.push_image(
        &theirs,
        &format!("{other_org}/theirs"),
        "v1",
        b"their layer",
    )
    .await;
    let r = reg
        .req(Method::GET, "/v2/_catalog", Some(&theirs))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.json::<Value>().await.unwrap()["repositories"],
        serde_json::json!([format!("{other_org}/theirs")])
    );
    let r = reg
        .req(Method::GET, "/v2/_catalog", Some(&ours))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.json::<Value>().await.unwrap()["repositories"],
        serde_json::json!([repo])
    );
}
