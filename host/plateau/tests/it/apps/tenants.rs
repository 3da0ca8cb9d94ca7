//! Tenants, names and plans: another organisation sees none of an app and
//! cannot deploy another organisation's image; a rename keeps the slug
//! and url; the plan's number of apps is enforced, the trash included.

use plateau_testkit::{Backend, Client};
use serde_json::json;

use super::{Apps, id, push};
use crate::on_both_backends;

on_both_backends!(tenants_names_and_plans);

async fn tenants_names_and_plans(backend: Backend) {
    let env = Apps::start(backend).await;
    let c = env.client();
    let app = env.deployed("Shop", &env.v1).await;
    let app_id = id(&app);

    // Rename: the slug and url stay.
    let r = c
        .patch(
            &format!("/apps/{app_id}"),
            json!({ "name": "Shop Renamed" }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let renamed = r.json();
    assert_eq!(renamed["name"], "Shop Renamed");
    assert_eq!(renamed["slug"], app["slug"]);
    assert_eq!(renamed["url"], app["url"]);

    // Another organisation (the bootstrap one, on the free plan).
    let other = env.server.client();
    for path in [
        format!("/apps/{app_id}"),
        format!("/apps/{app_id}/deployments"),
        format!("/apps/{app_id}/env"),
        format!("/apps/{app_id}/logs"),
        format!("/apps/{app_id}/scale"),
    ] {
        let r = other.get(&path).await;
        assert_eq!(r.status, 404, "{path}: {}", r.text());
    }
    let r = other
        .post(&format!("/apps/{app_id}/pause"), json!({}))
        .await;
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(other.get("/apps").await.json()["total"], 0);
    // It cannot deploy the first organisation's image: refused when asked,
    // naming the field, with nothing made.
    let r = other
        .post("/apps", json!({ "name": "thief", "image": env.v1 }))
        .await;
    assert_eq!(
        (r.status, r.json()["errors"][0]["field"].as_str()),
        (400, Some("image")),
        "{}",
        r.text()
    );
    assert!(r.text().contains("cannot pull it"), "{}", r.text());
    assert_eq!(other.get("/apps").await.json()["total"], 0);
    let r = other.post("/apps", json!({ "name": "thief" })).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let thief = id(&r.json());
    let r = other
        .post(
            &format!("/apps/{thief}/deployments"),
            json!({ "image": env.v1 }),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    let history = other
        .get(&format!("/apps/{thief}/deployments"))
        .await
        .json();
    assert_eq!(history["total"], 0, "{history}");

    // The free plan allows one app: a second is refused, with the reason.
    let r = other.post("/apps", json!({ "name": "second" })).await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(r.code(), "plan_limit_reached");
    assert!(r.text().contains("free plan allows 1 app"), "{}", r.text());
    // The trash does not count; restoring beyond the plan is refused.
    let r = other.delete(&format!("/apps/{thief}")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["status"], "deleted");
    assert_eq!(
        other.get(&format!("/apps/{thief}")).await.json()["status"],
        "deleted"
    );
    let r = other.post("/apps", json!({ "name": "second" })).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = other
        .post(&format!("/apps/{thief}/restore"), json!({}))
        .await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(r.code(), "plan_limit_reached");

    // Its own images deploy (pushed with its own token).
    let reference = format!(
        "{}/{}/mine:v1",
        env.server.url.trim_start_matches("http://"),
        other.get("/me").await.json()["organization"]["id"]
            .as_str()
            .unwrap()
    );
    push(
        &env.server.token,
        plateau_plugin_artifacts::apps::HELLO_APP,
        &reference,
    )
    .await;
    let second = id(&other.get("/apps").await.json()["items"][0]);
    let r = other
        .post(
            &format!("/apps/{second}/deployments"),
            json!({ "image": reference }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let d = crate::until(
        &other,
        &format!("/apps/{second}/deployments"),
        "the deployment",
        |p| p["items"][0]["status"] != "pending",
    )
    .await;
    assert_eq!(d["items"][0]["status"], "live", "{d}");

    // Trash and restore redeploy the first organisation's app.
    let r = c.delete(&format!("/apps/{app_id}")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(c.get("/apps").await.json()["total"], 0);
    let r = c
        .post(&format!("/apps/{app_id}/deployments"), json!({}))
        .await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(r.code(), "app_in_trash");
    let r = c.post(&format!("/apps/{app_id}/restore"), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let edge = super::Edge::new(&env.server, app["slug"].as_str().unwrap());
    edge.until_body("hello from v1").await;

    // Scopes: apps:read cannot create or deploy.
    let reader = crate::mint_for(&env, &["apps:read"]).await;
    let reader = Client::new(&env.server.url).with_token(&reader);
    let r = reader.post("/apps", json!({ "name": "nope" })).await;
    assert_eq!(r.status, 403, "{}", r.text());
    let r = reader
        .post(&format!("/apps/{app_id}/deployments"), json!({}))
        .await;
    assert_eq!(r.status, 403, "{}", r.text());
}
