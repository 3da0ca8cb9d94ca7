//! One app's life on one server: deployed, redeployed and rolled back
//! under load without a failed request, a deployment that never gets
//! healthy leaving the live one serving, pause and resume, logs, history
//! and events, and a restart that brings the app back.

use std::time::Duration;

use plateau_testkit::Backend;
use serde_json::json;

use super::{Apps, Edge, Load, failures, id, slug};
use crate::on_both_backends;

on_both_backends!(lifecycle);

async fn lifecycle(backend: Backend) {
    let mut env = Apps::start(backend).await;
    let c = env.client();
    let app = env.deployed("Hello", &env.v1).await;
    let (app_id, slug) = (id(&app), slug(&app));
    assert_eq!(
        app["url"].as_str().unwrap(),
        format!(
            "http://{slug}.apps.localhost:{}",
            env.server.edge_url.rsplit(':').next().unwrap()
        )
    );
    let edge = Edge::new(&env.server, &slug);
    assert_eq!(
        edge.get("/").await.unwrap(),
        (200, "hello from v1".to_owned())
    );

    // Deploy v2 under load: every request answers, from v1 or from v2.
    let load = Load::start(&env.server, &slug, 4);
    let r = c
        .post(
            &format!("/apps/{app_id}/deployments"),
            json!({ "image": env.v2 }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let v2 = env.settled(&app_id, &id(&r.json())).await;
    assert_eq!(v2["status"], "live", "{v2}");
    edge.until_body("hello from v2").await;
    // Roll back to v1, still under load: no rebuild, no pull.
    let r = c.post(&format!("/apps/{app_id}/rollback"), json!({})).await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["cause"], "rollback");
    let back = env.settled(&app_id, &id(&r.json())).await;
    assert_eq!(back["status"], "live", "{back}");
    edge.until_body("hello from v1").await;
    let answers = load.finish().await;
    assert!(
        answers.len() > 20,
        "the load sent {} requests",
        answers.len()
    );
    let failed = failures(&answers, &["hello from v1", "hello from v2"]);
    assert!(
        failed.is_empty(),
        "{} of {} failed: {:?}",
        failed.len(),
        answers.len(),
        &failed[..failed.len().min(5)]
    );

    // A deployment that never gets healthy fails with its reason; v1 serves on.
    let r = c
        .post(
            &format!("/apps/{app_id}/deployments"),
            json!({ "image": env.broken }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let broken = env.settled(&app_id, &id(&r.json())).await;
    assert_eq!(broken["status"], "failed", "{broken}");
    let reason = broken["reason"].as_str().unwrap();
    assert!(
        reason.contains("health check") && reason.contains("500"),
        "{reason}"
    );
    assert_eq!(
        edge.get("/").await.unwrap(),
        (200, "hello from v1".to_owned())
    );
    let detail = c.get(&format!("/apps/{app_id}")).await.json();
    assert_eq!(detail["status"], "running");
    assert_eq!(detail["liveDeploymentId"], back["id"]);

    // A cron job reaches the app at its url through the edge, although
    // the server exempts no loopback address from the egress guard.
    let r = c
        .post(
            "/cron-jobs",
            json!({ "name": "ping-app", "schedule": "0 0 1 1 *", "type": "http", "url": app["url"] }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let job = id(&r.json());
    let r = c
        .post(&format!("/cron-jobs/{job}/trigger"), json!({}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let run = crate::eventually("the cron job's run", Duration::from_secs(60), || async {
        let runs = c
            .get(&format!("/cron-jobs/{job}/runs?limit=1"))
            .await
            .json();
        let run = runs["items"][0].clone();
        (run["status"] != "running" && !run.is_null()).then_some(run)
    })
    .await;
    assert_eq!(
        (run["httpStatus"].as_u64(), run["responseBody"].as_str()),
        (Some(200), Some("hello from v1")),
        "{run}"
    );

    // History, newest first, with sources and digests.
    let history = c.get(&format!("/apps/{app_id}/deployments")).await.json();
    let statuses: Vec<&str> = history["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["failed", "live", "superseded", "superseded"]);
    let items = history["items"].as_array().unwrap();
    assert_eq!(items[3]["image"], env.v1.as_str());
    assert_eq!(items[2]["image"], env.v2.as_str());
    assert_eq!(
        items[1]["digest"], items[3]["digest"],
        "a rollback runs the same image"
    );
    assert!(items[3]["digest"].as_str().unwrap().starts_with("sha256:"));
    let page = c
        .get(&format!("/apps/{app_id}/deployments?limit=2"))
        .await
        .json();
    assert_eq!(page["items"].as_array().unwrap().len(), 2);
    assert_eq!(page["total"], 4);
    assert!(page["nextCursor"].is_string());

    // Pause and resume under load: the app answers, or the edge says it
    // is paused; nothing else.
    let load = Load::start(&env.server, &slug, 4);
    let r = c.post(&format!("/apps/{app_id}/pause"), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["status"], "paused");
    let (status, body) = edge.get("/").await.unwrap();
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("app_paused"), "{body}");
    // The status says what is true: resuming until the replicas pass
    // their health check, then running.
    let r = c.post(&format!("/apps/{app_id}/resume"), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["status"], "resuming");
    edge.until_body("hello from v1").await;
    crate::until(&c, &format!("/apps/{app_id}"), "the app to run", |a| {
        a["status"] == "running"
    })
    .await;
    let answers = load.finish().await;
    let odd: Vec<_> = answers
        .iter()
        .filter(|a| match a {
            Ok((200, b)) => b != "hello from v1",
            Ok((503, b)) => !b.contains("app_paused"),
            _ => true,
        })
        .collect();
    assert!(
        odd.is_empty(),
        "{} of {} neither served nor paused: {:?}",
        odd.len(),
        answers.len(),
        &odd[..odd.len().min(5)]
    );
    let r = c.post(&format!("/apps/{app_id}/resume"), json!({})).await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(r.code(), "app_not_paused");

    // The app's stdout and stderr are its logs, newest last.
    let logs = crate::until(&c, &format!("/apps/{app_id}/logs"), "the app's logs", |l| {
        let lines = l["items"].as_array().unwrap();
        lines
            .iter()
            .any(|x| x["stream"] == "stdout" && x["line"] == "v1 served /")
            && lines
                .iter()
                .any(|x| x["stream"] == "stderr" && x["line"] == "v1 stderr /")
    })
    .await;
    let last = logs["items"].as_array().unwrap().last().unwrap().clone();
    let later = c
        .get(&format!(
            "/apps/{app_id}/logs?since={}",
            last["at"].as_str().unwrap()
        ))
        .await;
    assert_eq!(later.status, 200, "{}", later.text());
    assert!(
        later.json()["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l["at"].as_str() >= last["at"].as_str())
    );
    let bad = c.get(&format!("/apps/{app_id}/logs?since=yesterday")).await;
    assert_eq!(bad.status, 400, "{}", bad.text());

    // Every step is in the timeline.
    let events = c.get("/events?limit=200").await.json();
    let types = crate::event_types(&events);
    for kind in [
        "app.created",
        "app.deployment.created",
        "app.deployment.pulled",
        "app.deployment.live",
        "app.deployment.failed",
        "app.paused",
        "app.resumed",
    ] {
        assert!(types.contains(&kind), "{kind} missing from {types:?}");
    }

    // A restart brings the live app back up, without the registry.
    env.server.restart().await;
    let edge = Edge::new(&env.server, &slug);
    edge.until_body("hello from v1").await;
}
