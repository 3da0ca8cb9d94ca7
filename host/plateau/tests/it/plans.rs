//! The operator changes an organisation's plan (admin API and `plateau
//! admin set-plan`): an upgrade applies and holds on the next call, a
//! downgrade past the new plan's limits is refused naming each resource
//! kind over with its count and limit, and applies once what is over is
//! gone; tokens are refused; audited in `billing`. One server, on SQLite.

use std::time::Duration;

use plateau_testkit::Backend;
use serde_json::json;

use crate::{admin, create_org, eventually, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_changes_a_plan_and_refuses_a_downgrade_past_its_limits() {
    let s = start(Backend::Sqlite).await;
    let admin = s.anonymous().with_cookie(&admin::login(&s).await);
    let owner = s
        .anonymous()
        .with_token(&create_org(&s, "Acme", "free").await);
    let org = owner.get("/me").await.json()["organization"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/admin/organizations/{org}");

    // Tokens never change plans (a valid one is 403: authenticated, not
    // the operator); bad input names its field.
    let r = owner.patch(&path, json!({ "plan": "pro" })).await;
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(r.json()["code"], "admin_session_required");
    let r = admin.patch(&path, json!({ "plan": "platinum" })).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["errors"][0]["field"], "plan");
    assert_eq!(
        admin
            .patch("/admin/organizations/org_nope", json!({ "plan": "pro" }))
            .await
            .status,
        404
    );

    // Up to pro: two caches fit.
    let r = admin.patch(&path, json!({ "plan": "pro" })).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["organization"]["plan"], "pro");
    assert_eq!(owner.get("/me").await.json()["organization"]["plan"], "pro");
    let mut caches = Vec::new();
    for name in ["one", "two"] {
        let r = owner
            .post("/caches", json!({ "name": name, "memoryMb": 32 }))
            .await;
        assert_eq!(r.status, 201, "{}", r.text());
        caches.push(r.json()["id"].as_str().unwrap().to_owned());
    }
    let detail = admin.get(&path).await.json();
    assert_eq!(detail["footprint"]["cacheInstances"], 2, "{detail}");
    assert_eq!(detail["limits"]["cacheInstances"], 3, "{detail}");

    // Down to free (one cache): refused, naming what is over.
    let r = admin.patch(&path, json!({ "plan": "free" })).await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (409, "plan_limits_exceeded"),
        "{}",
        r.text()
    );
    let problem = r.json();
    assert_eq!(problem["errors"].as_array().unwrap().len(), 1, "{problem}");
    assert_eq!(problem["errors"][0]["field"], "cacheInstances");
    assert_eq!(
        problem["errors"][0]["message"],
        "2 cache instances; the free plan allows 1"
    );
    assert_eq!(owner.get("/me").await.json()["organization"]["plan"], "pro");
    // The CLI refuses the same way.
    let out = s
        .command(&["admin", "set-plan", "--org", &org, "free"])
        .await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cacheInstances: 2 cache instances"),
        "{stderr}"
    );

    // Once one cache is gone, the downgrade applies.
    let r = owner.delete(&format!("/caches/{}", caches[1])).await;
    assert!(r.status < 300, "{}", r.text());
    let detail = eventually(
        "the second cache to be gone",
        Duration::from_secs(60),
        || async {
            let d = admin.get(&path).await.json();
            (d["footprint"]["cacheInstances"] == 1).then_some(d)
        },
    )
    .await;
    eprintln!("footprint after the delete: {}", detail["footprint"]);
    let out = s
        .command(&["admin", "set-plan", "--org", &org, "free"])
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = admin.get(&path).await.json();
    assert_eq!(r["organization"]["plan"], "free");

    let audit = owner.get("/audit?category=billing").await.json();
    let changes: Vec<_> = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "organization.plan_changed")
        .collect();
    assert_eq!(changes.len(), 2, "{audit}");
}
