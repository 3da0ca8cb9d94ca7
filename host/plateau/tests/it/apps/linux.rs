//! A Linux image as an app: a busybox rootfs (Debian's busybox-static)
//! packed in the test as an OCI image (a gzip layer, a config, a manifest,
//! and for v1 an index naming it for linux/amd64), pushed to the server's
//! registry over the OCI protocol (v1) and by skopeo (v2), deployed, served through the edge
//! with the app's env, redeployed and rolled back, brought back by a
//! restart; pause and delete leave no container, state or network
//! namespace behind. Needs root and runc.

use std::path::{Path, PathBuf};

use plateau_testkit::Backend;
use plateau_testkit::oci::{ImagePusher, busybox_layer};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use super::{Apps, Edge, Load, failures, id, slug};
use crate::on_both_backends;

on_both_backends!(linux_image_lifecycle);

/// The network namespaces the server's running replicas joined (from
/// their bundles under the data directory).
fn namespaces(data_dir: &Path) -> Vec<PathBuf> {
    let bundles = data_dir.join("apps/containers/bundles");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(bundles).into_iter().flatten().flatten() {
        let Ok(text) = std::fs::read(entry.path().join("config.json")) else {
            continue;
        };
        let config: Value = serde_json::from_slice(&text).unwrap();
        for ns in config["linux"]["namespaces"].as_array().unwrap() {
            if let Some(path) = ns["path"].as_str() {
                found.push(PathBuf::from(path));
            }
        }
    }
    found
}

/// The containers runc knows under the server's data directory.
fn containers(data_dir: &Path) -> Vec<String> {
    let out = std::process::Command::new("runc")
        .arg("--root")
        .arg(data_dir.join("apps/containers/state"))
        .args(["list", "--quiet"])
        .output()
        .expect("runc runs (install the runc package)");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Waits until the server runs no container and `gone` namespaces are
/// deleted.
async fn until_nothing_runs(data_dir: &Path, gone: &[PathBuf]) {
    for _ in 0..400 {
        if containers(data_dir).is_empty() && gone.iter().all(|p| !p.exists()) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!(
        "containers {:?} or namespaces {:?} are left",
        containers(data_dir),
        gone.iter().filter(|p| p.exists()).collect::<Vec<_>>()
    );
}

async fn linux_image_lifecycle(backend: Backend) {
    let mut env = Apps::start(backend).await;
    let c = env.client();
    let data_dir = env.server.data_dir.path().to_owned();
    let registry = ImagePusher::new(&env.server.url, &env.token);
    let layer = busybox_layer();
    let repo = format!("{}/web", env.org);
    let v1 = registry.push_busybox(&repo, "v1", "v1", &layer, true).await;
    let v2 = registry
        .skopeo_push_busybox(&repo, "v2", "v2", &layer)
        .await;

    // The env is set before the first deployment, which then carries it.
    let r = c.post("/apps", json!({ "name": "Web" })).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let app_id = id(&r.json());
    let r = c
        .post(
            &format!("/apps/{app_id}/env"),
            json!({ "env": { "GREETING": "hello from busybox" } }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let r = c
        .post(
            &format!("/apps/{app_id}/deployments"),
            json!({ "image": v1 }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let first = env.settled(&app_id, &id(&r.json())).await;
    assert_eq!(first["status"], "live", "{first}");
    let app = c.get(&format!("/apps/{app_id}")).await.json();
    let edge = Edge::new(&env.server, &slug(&app));
    edge.until_body("hello from busybox v1\n").await;
    assert_eq!(containers(&data_dir).len(), 1);
    let r = c
        .get(&format!(
            "/apps/{app_id}/env/verify?key=GREETING&expected={}",
            hex::encode(Sha256::digest(b"hello from busybox"))
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());

    // The container's stdout and stderr are the app's logs.
    crate::until(
        &c,
        &format!("/apps/{app_id}/logs"),
        "the container's logs",
        |l| {
            let lines = l["items"].as_array().unwrap();
            lines
                .iter()
                .any(|x| x["stream"] == "stdout" && x["line"] == "started v1")
                && lines.iter().any(|x| {
                    x["stream"] == "stderr" && x["line"].as_str().unwrap().contains("response:200")
                })
                // Each line names the replica (the container's host name).
                && lines.iter().all(|x| x["replica"].as_str().is_some_and(|r| r.contains('-')))
        },
    )
    .await;

    // Redeploy v2, roll back to v1, under load: every request answers, and
    // each switch leaves one container.
    let load = Load::start(&env.server, &slug(&app), 4);
    let r = c
        .post(
            &format!("/apps/{app_id}/deployments"),
            json!({ "image": v2 }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let d = env.settled(&app_id, &id(&r.json())).await;
    assert_eq!(d["status"], "live", "{d}");
    edge.until_body("hello from busybox v2\n").await;
    let r = c.post(&format!("/apps/{app_id}/rollback"), json!({})).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let back = env.settled(&app_id, &id(&r.json())).await;
    assert_eq!(back["status"], "live", "{back}");
    edge.until_body("hello from busybox v1\n").await;
    let answers = load.finish().await;
    let failed = failures(
        &answers,
        &["hello from busybox v1\n", "hello from busybox v2\n"],
    );
    assert!(
        failed.is_empty(),
        "{} of {} failed: {:?}",
        failed.len(),
        answers.len(),
        &failed[..failed.len().min(5)]
    );
    for _ in 0..400 {
        if containers(&data_dir).len() == 1 && namespaces(&data_dir).len() == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(containers(&data_dir).len(), 1, "the old replicas stopped");
    assert_eq!(namespaces(&data_dir).len(), 1, "the old namespaces went");

    // Pause: no container, no namespace; resume brings v1 back.
    let running = namespaces(&data_dir);
    assert_eq!(running.len(), 1, "{running:?}");
    let r = c.post(&format!("/apps/{app_id}/pause"), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text());
    until_nothing_runs(&data_dir, &running).await;
    let r = c.post(&format!("/apps/{app_id}/resume"), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text());
    edge.until_body("hello from busybox v1\n").await;

    // A restart of the API process leaves the containers to the host's
    // agent: the same replicas serve, none is added.
    let before = namespaces(&data_dir);
    env.server.restart().await;
    let c = env.client();
    let edge = Edge::new(&env.server, &slug(&app));
    edge.until_body("hello from busybox v1\n").await;
    assert_eq!(namespaces(&data_dir), before, "the agent kept its replicas");
    assert_eq!(containers(&data_dir).len(), 1);

    // Delete: the app's containers and namespaces go.
    let running = namespaces(&data_dir);
    let r = c.delete(&format!("/apps/{app_id}")).await;
    assert!(r.status == 200 || r.status == 204, "{}", r.text());
    until_nothing_runs(&data_dir, &running).await;
}
