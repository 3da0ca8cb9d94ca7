//! Garbage collection (`plateau admin registry-gc`) keeps what manifests
//! reference and removes the rest once the grace period is over; the
//! plan's storage limit refuses pushes with DENIED naming the limit.

use plateau_testkit::{Backend, ServerOptions};
use reqwest::Method;
use serde_json::Value;

use super::{Reg, sha256};

crate::on_both_backends!(
    gc_keeps_referenced_and_removes_the_rest,
    storage_limit_refuses_pushes
);

async fn gc(reg: &Reg, args: &[&str]) -> String {
    let mut all = vec!["admin", "registry-gc"];
    all.extend_from_slice(args);
    let out = reg.server.command(&all).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

async fn status(reg: &Reg, token: &str, method: Method, path: &str) -> u16 {
    reg.req(method, path, Some(token))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn gc_keeps_referenced_and_removes_the_rest(backend: Backend) {
    let reg =
        Reg::start_with(ServerOptions::new(backend).env("PLATEAU_REGISTRY_GC_INTERVAL_SECS", "0"))
            .await;
    let token = reg.token(&["registry:write"]).await;
    let repo = reg.repo("gc");
    let (kept_manifest, _) = reg.push_image(&token, &repo, "keep", b"kept layer").await;
    let (_, dropped) = reg
        .push_image(&token, &repo, "drop", b"dropped layer")
        .await;
    let orphan = reg.push_blob(&token, &repo, b"never referenced").await;
    assert_eq!(
        status(
            &reg,
            &token,
            Method::DELETE,
            &format!("/v2/{repo}/manifests/{dropped}")
        )
        .await,
        202
    );
    let upload = reg
        .req(
            Method::POST,
            &format!("/v2/{repo}/blobs/uploads/"),
            Some(&token),
        )
        .send()
        .await
        .unwrap();
    let upload = upload.headers()["location"].to_str().unwrap().to_owned();
    let r = reg
        .req(Method::PATCH, &upload, Some(&token))
        .body(vec![7u8; 1000])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let blob = |d: &str| format!("/v2/{repo}/blobs/{d}");
    // Within the grace period nothing goes.
    let out = gc(&reg, &[]).await;
    assert!(out.contains("0 uploads, 0 blobs"), "{out}");
    assert_eq!(
        status(&reg, &token, Method::HEAD, &blob(&orphan)).await,
        200
    );
    // Past it, what no manifest references goes.
    let out = gc(
        &reg,
        &[
            "--registry-gc-grace-secs",
            "0",
            "--registry-upload-ttl-secs",
            "0",
        ],
    )
    .await;
    assert!(out.contains("1 uploads, 2 blobs"), "{out}");
    assert_eq!(
        status(&reg, &token, Method::HEAD, &blob(&orphan)).await,
        404
    );
    assert_eq!(
        status(&reg, &token, Method::HEAD, &blob(&sha256(b"dropped layer"))).await,
        404
    );
    assert_eq!(status(&reg, &token, Method::GET, &upload).await, 404);
    // What the kept manifest references is intact.
    let r = reg
        .req(Method::GET, &blob(&sha256(b"kept layer")), Some(&token))
        .send()
        .await
        .unwrap();
    assert_eq!(r.bytes().await.unwrap().as_ref(), b"kept layer");
    let r = reg
        .req(
            Method::GET,
            &format!("/v2/{repo}/manifests/keep"),
            Some(&token),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.bytes().await.unwrap().as_ref(), kept_manifest.as_slice());
    // The files are gone from disk too.
    let orphan_dir = reg
        .server
        .data_dir
        .path()
        .join("registry/blobs")
        .join(&reg.org)
        .join("sha256")
        .join(orphan.trim_start_matches("sha256:"));
    assert!(!orphan_dir.exists() || std::fs::read_dir(&orphan_dir).unwrap().next().is_none());
    // A second run finds nothing more.
    let out = gc(&reg, &["--registry-gc-grace-secs", "0"]).await;
    assert!(out.contains("0 uploads, 0 blobs"), "{out}");
}

/// Sets the free plan's storage limit directly in the database.
async fn set_free_storage_gb(reg: &Reg, gb: i64) {
    sqlx::any::install_default_drivers();
    let url = match &reg.server.database_url {
        Some(url) => url.clone(),
        None => format!(
            "sqlite://{}",
            reg.server.data_dir.path().join("plateau.db").display()
        ),
    };
    let pool = sqlx::AnyPool::connect(&url).await.unwrap();
    sqlx::query("UPDATE plans SET storage_gb = $1 WHERE name = 'free'")
        .bind(gb)
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
}

async fn storage_limit_refuses_pushes(backend: Backend) {
    let reg = Reg::start(backend).await;
    let token = reg.token(&["registry:write"]).await;
    let repo = reg.repo("quota");
    reg.push_blob(&token, &repo, b"fits").await;
    set_free_storage_gb(&reg, 0).await;
    let data = b"does not fit".to_vec();
    let r = reg
        .req(
            Method::POST,
            &format!("/v2/{repo}/blobs/uploads/?digest={}", sha256(&data)),
            Some(&token),
        )
        .body(data.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["errors"][0]["code"], "DENIED");
    let message = body["errors"][0]["message"].as_str().unwrap();
    assert!(message.contains("free plan allows 0 GB"), "{message}");
    // Nothing of it is visible.
    let r = reg
        .req(
            Method::HEAD,
            &format!("/v2/{repo}/blobs/{}", sha256(&data)),
            Some(&token),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    set_free_storage_gb(&reg, 1).await;
    reg.push_blob(&token, &repo, &data).await;
}
