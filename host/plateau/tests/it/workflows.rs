//! The built-in workflows plugin over HTTP on a manual clock: runs going
//! through several steps, retries up to `maxAttempts`, lease expiry and
//! stale lease tokens, cancellation, idempotent starts, lists and their
//! filters, scopes, tenant isolation, the error shape of bad input, and a
//! 90-day sleep that survives a restart and wakes on the host clock.

use plateau_testkit::{Backend, Client, ServerOptions};
use serde_json::{Value, json};

use crate::plugins::admin;
use crate::{advance, create_org, event_types, mint, start_with, until};

crate::on_both_backends!(
    runs_go_through_steps_retries_leases_and_cancellation,
    a_sleep_of_90_days_survives_a_restart_and_wakes_on_time,
);

const DAY_MS: u64 = 24 * 3600 * 1000;

fn options(backend: Backend) -> ServerOptions {
    ServerOptions::new(backend).env("PLATEAU_CLOCK", "manual")
}

async fn start_run(c: &Client, body: Value) -> Value {
    let r = c.post("/workflows/runs", body).await;
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

/// Claims the next step of `workflow`; the claim.
async fn claim(c: &Client, workflow: &str, lease_seconds: u32) -> Value {
    let r = c
        .post(
            "/workflows/next",
            json!({ "workflows": [workflow], "leaseSeconds": lease_seconds }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

async fn nothing_runnable(c: &Client, workflow: &str) {
    let r = c
        .post("/workflows/next", json!({ "workflows": [workflow] }))
        .await;
    assert_eq!(r.status, 204, "{}", r.text());
}

/// Reports `what` (complete, fail, sleep) for a claim; the response.
async fn report(
    c: &Client,
    claim: &Value,
    what: &str,
    mut body: Value,
) -> plateau_testkit::Response {
    body["leaseToken"] = claim["leaseToken"].clone();
    let id = claim["runId"].as_str().unwrap();
    c.post(&format!("/workflows/runs/{id}/{what}"), body).await
}

fn fields(problem: &Value) -> Vec<&str> {
    problem["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect()
}

async fn runs_go_through_steps_retries_leases_and_cancellation(backend: Backend) {
    let s = start_with(options(backend)).await;
    let c = s.client();
    let admin = admin(&s).await;

    // Bad input: every field at once, in the one problem shape.
    let r = c
        .post(
            "/workflows/runs",
            json!({ "workflow": "bad name", "step": "", "maxAttempts": 0, "idempotencyKey": "" }),
        )
        .await;
    assert_eq!((r.status, r.code().as_str()), (400, "validation_failed"));
    assert_eq!(
        fields(&r.json()),
        ["workflow", "step", "maxAttempts", "idempotencyKey"],
        "{}",
        r.text()
    );
    let r = c
        .post("/workflows/runs", json!({ "workflow": "x", "colour": 1 }))
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    let r = c
        .post(
            "/workflows/next",
            json!({ "leaseSeconds": 0, "workflows": [] }),
        )
        .await;
    assert_eq!(
        (r.status, fields(&r.json())),
        (400, vec!["workflows", "leaseSeconds"])
    );
    assert_eq!(c.get("/workflows/runs/run_nope").await.status, 404);
    let r = c.get("/workflows/runs?status=done").await;
    assert_eq!((r.status, r.code().as_str()), (400, "validation_failed"));
    let r = c.post("/workflows/next", json!({})).await;
    assert_eq!(r.status, 204, "nothing is runnable yet: {}", r.text());

    // Three steps to completion, each handed the previous one's output.
    let run = start_run(
        &c,
        json!({ "workflow": "order", "input": { "sku": "a-1", "qty": 2 } }),
    )
    .await;
    let id = run["id"].as_str().unwrap().to_owned();
    assert_eq!(run["status"], "running");
    assert_eq!(run["currentStep"]["name"], "start");
    let first = claim(&c, "order", 30).await;
    assert_eq!(
        (
            first["runId"].as_str(),
            first["step"].clone(),
            first["attempt"].clone(),
            first["input"]["qty"].clone()
        ),
        (Some(id.as_str()), json!("start"), json!(1), json!(2)),
        "{first}"
    );
    nothing_runnable(&c, "order").await;
    let r = report(
        &c,
        &first,
        "complete",
        json!({ "output": { "reserved": true }, "nextStep": "charge" }),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["currentStep"]["name"], "charge");
    let second = claim(&c, "order", 30).await;
    assert_eq!(second["step"], "charge");
    assert_eq!(second["previousOutput"], json!({ "reserved": true }));
    let r = report(
        &c,
        &second,
        "complete",
        json!({ "output": 42, "nextStep": "ship" }),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let third = claim(&c, "order", 30).await;
    assert_eq!(
        (third["step"].clone(), third["previousOutput"].clone()),
        (json!("ship"), json!(42))
    );
    let r = report(&c, &third, "complete", json!({ "output": "shipped" })).await;
    assert_eq!(
        (
            r.status,
            r.json()["status"].clone(),
            r.json()["output"].clone()
        ),
        (200, json!("completed"), json!("shipped"))
    );
    // A report on a finished run is refused.
    let r = report(&c, &third, "complete", json!({})).await;
    assert_eq!(r.status, 409, "{}", r.text());
    let done = c.get(&format!("/workflows/runs/{id}")).await.json();
    let steps: Vec<(&str, &str, u64)> = done["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap(),
                s["status"].as_str().unwrap(),
                s["attempts"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            ("start", "completed", 1),
            ("charge", "completed", 1),
            ("ship", "completed", 1)
        ],
        "{done}"
    );
    assert_eq!(done["steps"][1]["output"], 42);
    assert!(
        done["currentStep"].is_null() && done["finishedAt"].is_string(),
        "{done}"
    );

    // Retries with backoff until maxAttempts, then the run fails.
    let run = start_run(&c, json!({ "workflow": "flaky", "maxAttempts": 3 })).await;
    let flaky = run["id"].as_str().unwrap().to_owned();
    for attempt in 1..=3 {
        let claimed = claim(&c, "flaky", 30).await;
        assert_eq!(claimed["attempt"], attempt, "{claimed}");
        let r = report(
            &c,
            &claimed,
            "fail",
            json!({ "error": format!("boom {attempt}") }),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text());
        let run = r.json();
        if attempt < 3 {
            assert_eq!(
                (run["status"].clone(), run["currentStep"]["state"].clone()),
                (json!("running"), json!("retrying")),
                "{run}"
            );
            // Not before the backoff (at least half of 1 s, 2 s, ...).
            nothing_runnable(&c, "flaky").await;
            advance(&admin, 1000 << (attempt - 1)).await;
        } else {
            assert_eq!(run["status"], "failed", "{run}");
            assert!(run["error"].as_str().unwrap().contains("boom 3"), "{run}");
        }
    }
    nothing_runnable(&c, "flaky").await;
    let failed = c.get(&format!("/workflows/runs/{flaky}")).await.json();
    assert_eq!(failed["steps"][0]["status"], "failed", "{failed}");
    assert_eq!(
        failed["steps"][0]["errors"].as_array().unwrap().len(),
        3,
        "{failed}"
    );
    // `retry: false` fails the run at once.
    start_run(&c, json!({ "workflow": "fatal" })).await;
    let claimed = claim(&c, "fatal", 30).await;
    let r = report(
        &c,
        &claimed,
        "fail",
        json!({ "error": "bad card", "retry": false }),
    )
    .await;
    assert_eq!(r.json()["status"], "failed", "{}", r.text());
    let r = report(&c, &claimed, "fail", json!({})).await;
    assert_eq!((r.status, fields(&r.json())), (400, vec!["error"]));

    // An expired lease: the step is claimed again by another worker, and
    // the first worker's token is refused.
    start_run(&c, json!({ "workflow": "slow" })).await;
    let worker_1 = claim(&c, "slow", 10).await;
    advance(&admin, 10_000).await;
    let r = report(&c, &worker_1, "complete", json!({})).await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert!(r.text().contains("expired"), "{}", r.text());
    let worker_2 = claim(&c, "slow", 10).await;
    assert_eq!(
        (worker_2["runId"].clone(), worker_2["attempt"].clone()),
        (worker_1["runId"].clone(), json!(2))
    );
    let r = report(&c, &worker_1, "complete", json!({})).await;
    assert_eq!((r.status, r.code().as_str()), (409, "conflict"));
    assert!(r.text().contains("stale"), "{}", r.text());
    let r = report(&c, &worker_2, "complete", json!({ "output": 1 })).await;
    assert_eq!(r.json()["status"], "completed", "{}", r.text());

    // Cancel: a running run stops, its worker is refused, twice is 409.
    let run = start_run(&c, json!({ "workflow": "doomed" })).await;
    let doomed = run["id"].as_str().unwrap().to_owned();
    let held = claim(&c, "doomed", 30).await;
    let r = c
        .post(&format!("/workflows/runs/{doomed}/cancel"), json!({}))
        .await;
    assert_eq!(
        (r.status, r.json()["status"].clone()),
        (200, json!("cancelled"))
    );
    assert_eq!(
        c.post(&format!("/workflows/runs/{doomed}/cancel"), json!({}))
            .await
            .status,
        409
    );
    assert_eq!(report(&c, &held, "complete", json!({})).await.status, 409);
    advance(&admin, 60_000).await;
    nothing_runnable(&c, "doomed").await;
    let run = c.get(&format!("/workflows/runs/{doomed}")).await.json();
    assert_eq!(run["steps"][0]["status"], "cancelled", "{run}");

    // An idempotency key returns the run it started.
    let first = start_run(
        &c,
        json!({ "workflow": "once", "idempotencyKey": "order-7" }),
    )
    .await;
    let r = c
        .post(
            "/workflows/runs",
            json!({ "workflow": "once", "idempotencyKey": "order-7" }),
        )
        .await;
    assert_eq!(
        (r.status, r.json()["id"].clone()),
        (200, first["id"].clone())
    );

    // Lists: by workflow and status, paginated.
    let all = c.get("/workflows/runs").await.json();
    assert_eq!(all["total"], 6, "{all}");
    let r = c.get("/workflows/runs?status=completed").await.json();
    assert_eq!(r["total"], 2, "{r}");
    let r = c
        .get("/workflows/runs?workflow=flaky&status=failed")
        .await
        .json();
    assert_eq!(
        (r["total"].clone(), r["items"][0]["id"].clone()),
        (json!(1), json!(flaky))
    );
    let r = c.get("/workflows/runs?workflow=order").await.json();
    assert_eq!(r["items"][0]["id"], id);
    let page = c.get("/workflows/runs?limit=4").await.json();
    let cursor = page["nextCursor"].as_str().unwrap();
    let rest = c
        .get(&format!("/workflows/runs?limit=4&cursor={cursor}"))
        .await
        .json();
    assert_eq!(
        page["items"].as_array().unwrap().len() + rest["items"].as_array().unwrap().len(),
        6
    );

    // The timeline has the runs' changes.
    let events = c.get("/events?type=workflows.*&limit=200").await.json();
    let types = event_types(&events);
    for t in [
        "workflows.run.started",
        "workflows.run.completed",
        "workflows.run.failed",
        "workflows.run.cancelled",
    ] {
        assert!(types.contains(&t), "{t} missing from {types:?}");
    }

    // Scopes: a read token cannot claim.
    let reader = s
        .anonymous()
        .with_token(&mint(&s, json!({ "scopes": ["workflows:read"] })).await);
    assert_eq!(
        reader.get(&format!("/workflows/runs/{id}")).await.status,
        200
    );
    let r = reader.post("/workflows/next", json!({})).await;
    assert_eq!(
        (r.status, r.json()["scope"].as_str()),
        (403, Some("workflows:write"))
    );

    // Tenants never see each other's runs or steps.
    let other = s
        .anonymous()
        .with_token(&create_org(&s, "other", "free").await);
    assert_eq!(
        other.get(&format!("/workflows/runs/{id}")).await.status,
        404
    );
    assert_eq!(other.get("/workflows/runs").await.json()["total"], 0);
    start_run(&c, json!({ "workflow": "mine" })).await;
    assert_eq!(other.post("/workflows/next", json!({})).await.status, 204);
    let r = other
        .post(
            "/workflows/runs",
            json!({ "workflow": "once", "idempotencyKey": "order-7" }),
        )
        .await;
    assert_eq!(r.status, 201, "an idempotency key is per organisation");
}

async fn a_sleep_of_90_days_survives_a_restart_and_wakes_on_time(backend: Backend) {
    let mut s = start_with(options(backend)).await;
    let c = s.client();
    let run = start_run(
        &c,
        json!({ "workflow": "trial", "input": { "user": "u1" } }),
    )
    .await;
    let id = run["id"].as_str().unwrap().to_owned();
    let claimed = claim(&c, "trial", 30).await;
    for bad in [0, 7_776_001] {
        let r = report(&c, &claimed, "sleep", json!({ "seconds": bad })).await;
        assert_eq!(
            (r.status, fields(&r.json())),
            (400, vec!["seconds"]),
            "{}",
            r.text()
        );
    }
    let r = report(
        &c,
        &claimed,
        "sleep",
        json!({ "seconds": 7_776_000, "output": { "welcomed": true }, "nextStep": "expire" }),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        (
            r.json()["status"].clone(),
            r.json()["currentStep"]["name"].clone()
        ),
        (json!("sleeping"), json!("expire"))
    );
    nothing_runnable(&c, "trial").await;

    // The manual clock starts again from the system's after a restart.
    s.restart().await;
    let c = s.client();
    let admin = admin(&s).await;
    advance(&admin, 30 * DAY_MS).await;
    advance(&admin, 30 * DAY_MS).await;
    advance(&admin, 29 * DAY_MS).await;
    nothing_runnable(&c, "trial").await;
    let run = c.get(&format!("/workflows/runs/{id}")).await.json();
    assert_eq!(run["status"], "sleeping", "{run}");
    advance(&admin, DAY_MS).await;
    let path = format!("/workflows/runs/{id}");
    until(&c, &path, "the run to wake", |run| {
        run["status"] == "running"
    })
    .await;
    let next = claim(&c, "trial", 30).await;
    assert_eq!(
        (next["step"].clone(), next["previousOutput"].clone()),
        (json!("expire"), json!({ "welcomed": true }))
    );
    let r = report(&c, &next, "complete", json!({ "output": "expired" })).await;
    assert_eq!(r.json()["status"], "completed", "{}", r.text());
    let run = c.get(&path).await.json();
    let statuses: Vec<&str> = run["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["slept", "completed"], "{run}");
    assert!(run["steps"][0]["wakeAt"].is_string(), "{run}");
    let events = c.get("/events?type=workflows.run.*&limit=200").await.json();
    let types = event_types(&events);
    assert!(types.contains(&"workflows.run.sleeping"), "{types:?}");
    assert!(types.contains(&"workflows.run.woken"), "{types:?}");
}
