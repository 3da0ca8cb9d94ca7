//! `/spend`: a free organisation's budget notifies at 50%, then at 100%
//! pauses its apps and refuses new resources as chosen; `POST
//! /spend/resume` undoes both and the budget does not act again this
//! month. Usage points are written into the series store directly (the
//! spend of a month of compute takes a month to accrue otherwise). A
//! project's budget takes its share; bad input names its field; scopes
//! and tenants.

use std::time::Duration;

use plateau_testkit::{Backend, Client, Server, ServerOptions};
use serde_json::{Value, json};

use crate::{create_org, eventually, start_with};

/// Adds, for each `(days_ago, quantity)`, `quantity` of `metric` for
/// `resource` (of `project`) on the day `days_ago` days before today
/// (UTC), in the server's database (SQLite or PostgreSQL).
pub async fn inject(
    s: &Server,
    org: &str,
    project: Option<&str>,
    resource: &str,
    metric: &str,
    points: &[(i64, f64)],
) {
    sqlx::any::install_default_drivers();
    let url = s.database_url.clone().unwrap_or_else(|| {
        format!(
            "sqlite://{}",
            s.data_dir.path().join("plateau.db").display()
        )
    });
    let pool = sqlx::AnyPool::connect(&url).await.unwrap();
    let now = plateau_core::time::now_ms();
    for (days_ago, quantity) in points {
        let day = plateau_core::time::to_date(now - days_ago * 86_400_000);
        sqlx::query(
        "INSERT INTO usage_points (org_id, resource_id, metric, day, resource_type, project_id, quantity) \
         VALUES ($1, $2, $3, $4, 'cache', $5, $6) \
         ON CONFLICT (org_id, resource_id, metric, day) DO UPDATE SET \
         quantity = usage_points.quantity + excluded.quantity",
    )
    .bind(org)
    .bind(resource)
    .bind(metric)
    .bind(day)
    .bind(project)
    .bind(quantity)
    .execute(&pool)
    .await
    .unwrap();
    }
    pool.close().await;
}

/// The events of `kind` about `resource`.
pub async fn events_of(c: &Client, kind: &str, resource: &str) -> Vec<Value> {
    let page = c
        .get(&format!("/events?type={kind}&limit=100"))
        .await
        .json();
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["resourceId"] == resource)
        .cloned()
        .collect()
}

async fn created(c: &Client, path: &str, body: Value) -> Value {
    let r = c.post(path, body).await;
    assert_eq!(r.status, 201, "{path}: {}", r.text());
    r.json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budgets_notify_pause_refuse_and_resume() {
    let s =
        start_with(ServerOptions::new(Backend::Sqlite).env("PLATEAU_ALARMS_EVALUATE_MS", "200"))
            .await;
    let c = s
        .client()
        .with_token(&create_org(&s, "spender", "free").await);
    let org = c.get("/me").await.json()["organization"]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // Bad input names each field.
    for (body, field) in [
        (json!({}), "amountCents"),
        (json!({ "amountCents": 0 }), "amountCents"),
        (json!({ "amountCents": 5, "thresholds": [0] }), "thresholds"),
        (json!({ "amountCents": 5, "thresholds": [] }), "thresholds"),
        (
            json!({ "amountCents": 5, "actions": ["explode"] }),
            "actions[0]",
        ),
        (
            json!({ "amountCents": 5, "notifyEmails": ["ops"] }),
            "notifyEmails[0]",
        ),
    ] {
        let r = c.post("/spend/budgets", body).await;
        assert_eq!(r.status, 400, "{field}: {}", r.text());
        assert_eq!(r.json()["errors"][0]["field"], field, "{}", r.text());
    }
    let r = c
        .post(
            "/spend/budgets",
            json!({ "amountCents": 5, "projectId": "prj_nope" }),
        )
        .await;
    assert_eq!(r.status, 404, "{}", r.text());

    let project = created(&c, "/projects", json!({ "name": "shop" })).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let app = created(
        &c,
        "/apps",
        json!({ "name": "Spender", "projectId": project }),
    )
    .await;
    let app_id = app["id"].as_str().unwrap().to_owned();
    let budget = created(
        &c,
        "/spend/budgets",
        json!({ "amountCents": 100, "actions": ["pause_apps", "refuse_new"],
                "notifyEmails": ["billing@example.com"] }),
    )
    .await;
    let budget_id = budget["id"].as_str().unwrap().to_owned();
    assert_eq!(budget["thresholds"], json!([50, 80, 100]), "{budget}");
    assert_eq!(budget["spentCents"], 0.0);
    let r = c.post("/spend/budgets", json!({ "amountCents": 7 })).await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(r.json()["code"], "budget_exists");
    let share = created(
        &c,
        "/spend/budgets",
        json!({ "projectId": project, "amountCents": 1000, "thresholds": [10] }),
    )
    .await;
    let share_id = share["id"].as_str().unwrap().to_owned();

    // Free includes 750 node-hours: 800 are 50 cents past it, half the
    // budget. The project consumed all of them, so all of it is its.
    inject(
        &s,
        &org,
        Some(&project),
        "cch_a",
        "compute_hours",
        &[(0, 800.0)],
    )
    .await;
    let within = Duration::from_secs(30);
    let half = eventually("the 50% notice", within, || async {
        events_of(&c, "spend.threshold.reached", &budget_id)
            .await
            .pop()
    })
    .await;
    assert_eq!(half["data"]["threshold"], 50, "{half}");
    assert_eq!(half["data"]["spentCents"], 50.0, "{half}");
    let spend = c.get("/spend").await.json();
    assert_eq!(spend["spentCents"], 50.0, "{spend}");
    assert_eq!(spend["paused"], json!([]), "{spend}");
    assert_eq!(
        c.get(&format!("/apps/{app_id}")).await.json()["status"],
        "created"
    );

    // 860 node-hours: 110 cents, past the budget.
    inject(
        &s,
        &org,
        Some(&project),
        "cch_a",
        "compute_hours",
        &[(0, 60.0)],
    )
    .await;
    let spend = eventually("the apps paused", within, || async {
        let spend = c.get("/spend").await.json();
        (spend["paused"].as_array().unwrap().len() == 1).then_some(spend)
    })
    .await;
    assert_eq!(spend["paused"][0]["appId"], app_id.as_str(), "{spend}");
    assert_eq!(spend["paused"][0]["status"], "paused", "{spend}");
    assert_eq!(spend["refusingNewResources"], true, "{spend}");
    let budgets = spend["budgets"].as_array().unwrap();
    assert_eq!(budgets[0]["id"], budget_id.as_str());
    assert_eq!(budgets[0]["limited"], true);
    assert_eq!(budgets[0]["percent"], 110.0);
    assert_eq!(
        budgets[1]["spentCents"], 110.0,
        "the project's share: {spend}"
    );
    assert_eq!(
        c.get(&format!("/apps/{app_id}")).await.json()["status"],
        "paused"
    );
    // The jump from 50% to 110% notifies the highest threshold reached.
    let notices: Vec<Value> = events_of(&c, "spend.threshold.reached", &budget_id)
        .await
        .iter()
        .map(|e| e["data"]["threshold"].clone())
        .collect();
    assert_eq!(notices, [json!(100), json!(50)], "newest first");
    let limit = events_of(&c, "spend.limit.reached", &budget_id).await;
    assert_eq!(limit.len(), 1, "{limit:?}");
    assert_eq!(limit[0]["data"]["pausedApps"], json!([app_id]));
    let mail = events_of(&c, "spend.email.requested", &budget_id).await;
    assert_eq!(mail.len(), 2, "{mail:?}");
    assert_eq!(mail[0]["data"]["to"], json!(["billing@example.com"]));
    assert!(
        mail[0]["data"]["text"]
            .as_str()
            .unwrap()
            .contains("POST /spend/resume")
    );
    let project_notice = eventually("the project's 10% notice", within, || async {
        events_of(&c, "spend.threshold.reached", &share_id)
            .await
            .pop()
    })
    .await;
    assert_eq!(project_notice["data"]["threshold"], 10);
    assert!(
        events_of(&c, "spend.email.requested", &share_id)
            .await
            .is_empty()
    );

    // New resources are refused, with the budget named.
    for (path, body) in [
        ("/projects", json!({ "name": "more" })),
        ("/apps", json!({ "name": "Another" })),
    ] {
        let r = c.post(path, body).await;
        assert_eq!(r.status, 409, "{path}: {}", r.text());
        assert_eq!(r.json()["code"], "spend_limit_reached");
        assert!(r.text().contains(&budget_id), "{}", r.text());
    }
    // Every way of starting a resource is refused, a manifest too.
    let r = c
        .post(
            "/manifest",
            json!({ "project": "shop", "apps": [], "databases": [],
                    "redis": [{ "name": "blocked", "replicas": 0 }] }),
        )
        .await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(r.json()["code"], "spend_limit_reached", "{}", r.text());

    // Scopes: reading is not changing; another organisation sees nothing.
    let reader = created(
        &c,
        "/tokens",
        json!({ "name": "ro", "scopes": ["spend:read"] }),
    )
    .await;
    let reader = c.with_token(reader["token"].as_str().unwrap());
    assert_eq!(reader.get("/spend").await.status, 200);
    assert_eq!(reader.post("/spend/resume", json!({})).await.status, 403);
    let other = c.with_token(&create_org(&s, "frugal", "free").await);
    assert_eq!(
        other
            .get(&format!("/spend/budgets/{budget_id}"))
            .await
            .status,
        404
    );
    assert_eq!(other.get("/spend").await.json()["budgets"], json!([]));
    assert_eq!(
        other
            .post("/projects", json!({ "name": "free" }))
            .await
            .status,
        201
    );

    // One call resumes what was paused and lifts the refusal.
    let r = c.post("/spend/resume", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let resumed = r.json();
    assert_eq!(resumed["apps"][0]["appId"], app_id.as_str(), "{resumed}");
    assert_eq!(resumed["apps"][0]["status"], "created", "{resumed}");
    assert_eq!(resumed["budgets"], json!([budget_id]));
    assert_eq!(
        c.get(&format!("/apps/{app_id}")).await.json()["status"],
        "created"
    );
    let spend = c.get("/spend").await.json();
    assert_eq!(spend["paused"], json!([]), "{spend}");
    assert_eq!(spend["refusingNewResources"], false, "{spend}");
    assert_eq!(
        c.post("/projects", json!({ "name": "more" })).await.status,
        201
    );
    // Evaluated again after the resume, still over, it does not act again.
    let after = c.get(&format!("/spend/budgets/{budget_id}")).await.json()["evaluatedAt"].clone();
    eventually("another evaluation", within, || async {
        let b = c.get(&format!("/spend/budgets/{budget_id}")).await.json();
        (b["evaluatedAt"] != after).then_some(())
    })
    .await;
    assert_eq!(
        c.get(&format!("/apps/{app_id}")).await.json()["status"],
        "created"
    );
    assert_eq!(
        events_of(&c, "spend.limit.reached", &budget_id).await.len(),
        1
    );
    let resumes = c.get("/events?type=spend.resumed").await.json();
    assert_eq!(resumes["items"].as_array().unwrap().len(), 1, "{resumes}");

    // A new amount notifies again from what it has reached.
    let r = c
        .patch(
            &format!("/spend/budgets/{budget_id}"),
            json!({ "amountCents": 200 }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["percent"], 55.0);
    let r = c.delete(&format!("/spend/budgets/{share_id}")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        c.get(&format!("/spend/budgets/{share_id}")).await.status,
        404
    );
}
