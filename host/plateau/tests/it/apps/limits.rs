//! Build limits, met for real: with the operator's
//! `PLATEAU_APPS_BUILD_TIMEOUT_SECONDS` and `PLATEAU_APPS_BUILD_MEMORY_MB`
//! set low, a Dockerfile whose RUN sleeps fails its deployment with
//! `build_timeout`, one whose RUN allocates past the memory fails with
//! `build_oom`; each keeps its build log, and the live deployment keeps
//! serving. Needs root (a memory cgroup), buildah and busybox-static.

use plateau_testkit::{Backend, ServerOptions};

use super::uploads::{site, upload_and_deploy};
use super::{Apps, Edge, id, slug};
use crate::on_both_backends;

on_both_backends!(builds_past_their_limits_fail);

async fn builds_past_their_limits_fail(backend: Backend) {
    let env = Apps::start_with(
        ServerOptions::new(backend)
            .env("PLATEAU_APPS_BUILD_TIMEOUT_SECONDS", "45")
            .env("PLATEAU_APPS_BUILD_MEMORY_MB", "160"),
    )
    .await;
    let app = env.deployed("Limited", &env.v1).await;
    let app_id = id(&app);
    let edge = Edge::new(&env.server, &slug(&app));
    edge.until_body("hello from v1").await;

    let slow = upload_and_deploy(&env, &app_id, site("echo sleeping && sleep 600")).await;
    assert_eq!(slow["status"], "failed", "{slow}");
    let reason = slow["reason"].as_str().unwrap();
    assert!(reason.starts_with("build_timeout"), "{slow}");
    assert!(
        slow["buildLog"].as_str().unwrap().contains("STEP"),
        "the log up to the limit is kept: {slow}"
    );
    assert_eq!(edge.get("/").await, Ok((200, "hello from v1".to_owned())));

    let greedy = upload_and_deploy(
        &env,
        &app_id,
        site("echo allocating && dd if=/dev/zero of=/dev/null bs=600M count=1"),
    )
    .await;
    assert_eq!(greedy["status"], "failed", "{greedy}");
    assert!(
        greedy["reason"].as_str().unwrap().starts_with("build_oom"),
        "{greedy}"
    );
    assert!(
        greedy["buildLog"].as_str().unwrap().contains("STEP"),
        "{greedy}"
    );
    assert_eq!(edge.get("/").await, Ok((200, "hello from v1".to_owned())));
    let detail = env.client().get(&format!("/apps/{app_id}")).await.json();
    assert_eq!(detail["status"], "running", "{detail}");
    assert_eq!(detail["liveDeploymentId"], app["liveDeploymentId"]);
}
