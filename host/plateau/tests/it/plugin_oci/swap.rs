//! Versions loaded from the registry hot-swap under load without a failed
//! request, and roll back from the database after the registry lost them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use plateau_plugin_artifacts::fixtures;
use plateau_testkit::Backend;
use reqwest::Method;
use serde_json::json;

use super::{Env, success_json};

crate::on_both_backends!(
    hot_swap_between_oci_versions_under_load,
    rollback_needs_no_registry
);

/// Pushes echo 1.0.0 as `echo:v1` and 2.0.0 as `echo:v2`; returns both
/// push reports.
async fn push_both(env: &Env) -> (serde_json::Value, serde_json::Value) {
    let v1 = env
        .push(fixtures::ECHO, &env.reference("plugins/echo:v1"))
        .await;
    let v2 = env
        .push(fixtures::ECHO_V2, &env.reference("plugins/echo:v2"))
        .await;
    (v1, v2)
}

async fn hot_swap_between_oci_versions_under_load(backend: Backend) {
    let env = Env::start(backend).await;
    let (v1, v2) = push_both(&env).await;
    let r = env
        .api_load(
            "echo",
            env.by_reference(&env.reference("plugins/echo:v1"), true),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let c = env.reg.server.client();
    assert_eq!(c.get("/echo/version").await.text(), "1.0.0");

    // Requests on other tasks, bounded in count and time, until the swaps end.
    let stop = Arc::new(AtomicBool::new(false));
    let load: Vec<_> = (0..3)
        .map(|_| {
            let (c, stop) = (c.clone(), stop.clone());
            tokio::spawn(async move {
                let started = Instant::now();
                let mut seen = Vec::new();
                while !stop.load(Ordering::Relaxed)
                    && seen.len() < 5000
                    && started.elapsed() < Duration::from_secs(120)
                {
                    let r = c.get("/echo/version").await;
                    seen.push((r.status, r.text()));
                }
                seen
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(100)).await;
    // v2 by digest through the CLI, back to v1 by tag through the API, then
    // v2 by tag through the API: every switch comes from the registry.
    let v2_pinned = v2["pinned"].as_str().unwrap();
    success_json(&env.cli_load("echo", v2_pinned, true).await);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let v1_pinned = v1["pinned"].as_str().unwrap();
    let r = env
        .api_load("echo", env.by_reference(v1_pinned, true))
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    tokio::time::sleep(Duration::from_millis(100)).await;
    let r = env
        .api_load(
            "echo",
            env.by_reference(&env.reference("plugins/echo:v2"), true),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.store(true, Ordering::Relaxed);

    let mut all = Vec::new();
    for task in load {
        all.extend(task.await.unwrap());
    }
    let failed: Vec<_> = all.iter().filter(|(status, _)| *status != 200).collect();
    assert!(failed.is_empty(), "zero failed requests: {failed:?}");
    let versions: std::collections::BTreeSet<&str> =
        all.iter().map(|(_, body)| body.as_str()).collect();
    assert_eq!(
        versions,
        ["1.0.0", "2.0.0"].into(),
        "{} requests saw both versions",
        all.len()
    );
    assert_eq!(c.get("/echo/version").await.text(), "2.0.0");
}

async fn rollback_needs_no_registry(backend: Backend) {
    let mut env = Env::start(backend).await;
    let (v1, _) = push_both(&env).await;
    for tag in ["v1", "v2"] {
        let reference = env.reference(&format!("plugins/echo:{tag}"));
        let r = env
            .api_load("echo", env.by_reference(&reference, true))
            .await;
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let c = env.reg.server.client();
    assert_eq!(c.get("/echo/version").await.text(), "2.0.0");

    // The registry forgets v1: its manifest and its blobs.
    let repo = env.reg.repo("plugins/echo");
    let manifest_digest = v1["digest"].as_str().unwrap();
    let manifest = env
        .reg
        .req(
            Method::GET,
            &format!("/v2/{repo}/manifests/{manifest_digest}"),
            Some(&env.writer),
        )
        .header("accept", crate::registry::OCI_MANIFEST)
        .send()
        .await
        .unwrap()
        .json::<serde_json::Value>()
        .await
        .unwrap();
    let delete = |path: String| env.reg.req(Method::DELETE, &path, Some(&env.writer)).send();
    let r = delete(format!("/v2/{repo}/manifests/{manifest_digest}"))
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    for blob in [&manifest["config"], &manifest["layers"][0]] {
        let digest = blob["digest"].as_str().unwrap();
        let r = delete(format!("/v2/{repo}/blobs/{digest}")).await.unwrap();
        assert_eq!(r.status(), 202, "{digest}");
    }
    let gone = env
        .api_load(
            "echo",
            env.by_reference(v1["pinned"].as_str().unwrap(), false),
        )
        .await;
    assert_eq!(
        (gone.status, gone.code().as_str()),
        (422, "oci_reference_unknown"),
        "{}",
        gone.text()
    );

    // Rollback serves v1 again from the stored bytes.
    let r = env
        .admin
        .post("/admin/plugins/echo/rollback", json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["activeVersion"], "1.0.0");
    assert_eq!(c.get("/echo/version").await.text(), "1.0.0");
    // And after a restart (on a new port), with the registry still without it.
    env.reg.server.restart().await;
    env.admin = crate::plugins::admin(&env.reg.server).await;
    let c = env.reg.server.client();
    assert_eq!(c.get("/echo/version").await.text(), "1.0.0");
    let versions = env.versions("echo").await;
    assert_eq!(versions.len(), 2);
    assert!(
        versions
            .iter()
            .all(|v| v["source"].as_str().unwrap().contains("/plugins/echo:v")),
        "{versions:?}"
    );
}
