//! Section 4.3: projects, and tenant isolation.

use plateau_testkit::Backend;
use serde_json::json;

use crate::{create_org, start};

crate::on_both_backends!(default_and_refused_deletes, tenants_never_see_each_other);

async fn default_and_refused_deletes(backend: Backend) {
    let s = start(backend).await;
    let c = s.client();
    let list = c.get("/projects").await.json();
    let default = list["items"][0].clone();
    assert_eq!(
        (default["name"].as_str(), default["isDefault"].as_bool()),
        (Some("default"), Some(true))
    );
    let r = c
        .delete(&format!("/projects/{}", default["id"].as_str().unwrap()))
        .await;
    assert_eq!((r.status, r.code().as_str()), (409, "default_project"));
    let p = c.post("/projects", json!({ "name": "api" })).await.json();
    let id = p["id"].as_str().unwrap().to_owned();
    assert_eq!(
        c.get(&format!("/projects/{id}")).await.json()["name"],
        "api"
    );
    // A grant limited to the project makes it non-empty.
    let g = c
        .post(
            "/connect/grants",
            json!({ "name": "ci", "allowedScopes": ["projects:read"], "projectId": id }),
        )
        .await;
    assert_eq!(g.status, 201, "{}", g.text());
    let r = c.delete(&format!("/projects/{id}")).await;
    assert_eq!((r.status, r.code().as_str()), (409, "project_not_empty"));
    assert!(
        r.json()["detail"]
            .as_str()
            .unwrap()
            .contains("connect grants")
    );
    let gid = g.json()["id"].as_str().unwrap().to_owned();
    assert_eq!(
        c.delete(&format!("/connect/grants/{gid}")).await.status,
        200
    );
    assert_eq!(c.delete(&format!("/projects/{id}")).await.status, 200);
    assert_eq!(c.get(&format!("/projects/{id}")).await.status, 404);
    assert_eq!(
        c.post("/projects", json!({ "name": "dup" })).await.status,
        201
    );
    let r = c.post("/projects", json!({ "name": "dup" })).await;
    assert_eq!((r.status, r.code().as_str()), (409, "name_taken"));
}

async fn tenants_never_see_each_other(backend: Backend) {
    let s = start(backend).await;
    let a = s.client();
    let b = s
        .anonymous()
        .with_token(&create_org(&s, "Beta", "pro").await);
    let project = a
        .post("/projects", json!({ "name": "secret-plans" }))
        .await
        .json();
    let pid = project["id"].as_str().unwrap();
    let token = a.post("/tokens", json!({ "name": "a-token" })).await.json();
    let tid = token["id"].as_str().unwrap();
    let grant = a
        .post(
            "/connect/grants",
            json!({ "name": "a-grant", "allowedScopes": ["projects:read"] }),
        )
        .await
        .json();
    let gid = grant["id"].as_str().unwrap();
    assert_eq!(b.get(&format!("/projects/{pid}")).await.status, 404);
    assert_eq!(b.delete(&format!("/projects/{pid}")).await.status, 404);
    assert_eq!(b.delete(&format!("/tokens/{tid}")).await.status, 404);
    assert_eq!(
        b.patch(
            &format!("/connect/grants/{gid}"),
            json!({ "enabled": false })
        )
        .await
        .status,
        404
    );
    assert_eq!(
        b.delete(&format!("/connect/grants/{gid}")).await.status,
        404
    );
    for path in [
        "/projects",
        "/tokens",
        "/connect/grants",
        "/events",
        "/audit",
    ] {
        let body = b.get(path).await.text();
        for id in [pid, tid, gid, "secret-plans", "a-token", "a-grant"] {
            assert!(!body.contains(id), "{path} of B shows {id} of A");
        }
    }
    assert_eq!(b.get("/me").await.json()["organization"]["plan"], "pro");
    // A's things are untouched.
    assert_eq!(a.get(&format!("/projects/{pid}")).await.status, 200);
    assert_eq!(
        a.get("/tokens").await.json()["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["status"] == "active")
            .count(),
        2
    );
}
