//! The manifest (spec section 4.3): a stack (a database, a cache and an
//! app whose environment refers to both) planned and applied from empty,
//! applied again unchanged (nothing touched: the same deployments and
//! `updatedAt`), changed (planned, then applied), and refused: invalid
//! fields named by their path, a cycle named, a missing scope, a field
//! that cannot change.

use std::time::Instant;

use plateau_testkit::Backend;
use serde_json::{Value, json};
use sha2::Digest;

use crate::apps::{Apps, id};

fn stack(image: &str, greeting: &str) -> Value {
    json!({
        "project": "shop",
        "databases": [{ "name": "main" }],
        "redis": [{ "name": "cache", "replicas": 0 }],
        "apps": [{
            "name": "web",
            "image": image,
            "env": {
                "DATABASE_URL": "${{ databases.main.uri }}",
                "REDIS_URL": "${{redis.cache.uri}}",
                "GREETING": greeting,
            },
        }],
    })
}

/// The item with `key` of a plan or apply.
fn item<'a>(plan: &'a Value, key: &str) -> &'a Value {
    plan["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["key"] == key)
        .unwrap_or_else(|| panic!("no item {key} in {plan}"))
}

/// The action of `field` of item `key`.
fn field<'a>(plan: &'a Value, key: &str, field: &str) -> &'a Value {
    item(plan, key)["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["field"] == field)
        .unwrap_or_else(|| panic!("no field {field} of {key} in {plan}"))
}

fn sha256(s: &str) -> String {
    hex::encode(sha2::Sha256::digest(s.as_bytes()))
}

/// What a no-op must leave alone: the app's deployments, and each
/// resource's `updatedAt`.
async fn snapshot(env: &Apps, app: &str, db: &str, cache: &str) -> Value {
    let c = env.client();
    json!({
        "deployments": c.get(&format!("/apps/{app}/deployments")).await.json()["items"]
            .as_array().unwrap().iter().map(|d| d["id"].clone()).collect::<Vec<_>>(),
        "app": c.get(&format!("/apps/{app}")).await.json()["updatedAt"],
        "database": c.get(&format!("/databases/{db}")).await.json()["updatedAt"],
        "cache": c.get(&format!("/caches/{cache}")).await.json()["updatedAt"],
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stack_is_planned_applied_reapplied_and_changed() {
    let env = Apps::start(Backend::Sqlite).await;
    let _databases = crate::databases::Processes::of(&env.server);
    let _caches = crate::cache::Processes::of(&env.server);
    let c = env.client();

    // The plan of an empty organisation: everything to create, nothing made.
    let r = c.post("/manifest/plan", stack(&env.v1, "hi")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let plan = r.json();
    assert_eq!(plan["project"]["action"], "create", "{plan}");
    let keys: Vec<&str> = plan["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["databases.main", "redis.cache", "apps.web"]);
    assert!(
        plan["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["action"] == "create"),
        "{plan}"
    );
    let url = field(&plan, "apps.web", "env.DATABASE_URL");
    assert_eq!(url["known"], false, "{plan}");
    assert_eq!(url["sensitive"], true, "{plan}");
    assert!(url["to"].is_null(), "an env value is never shown: {plan}");
    assert_eq!(plan["summary"]["create"], 3);
    assert_eq!(
        c.get("/databases").await.json()["items"],
        json!([]),
        "the plan made nothing"
    );
    let projects = c.get("/projects").await.json();
    assert!(!projects.to_string().contains("\"shop\""), "{projects}");

    // Apply from empty.
    let started = Instant::now();
    let r = c.post("/manifest", stack(&env.v1, "hi")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    eprintln!(
        "manifest apply from empty (1 database, 1 cache, 1 app): {:.2} s",
        started.elapsed().as_secs_f64()
    );
    let applied = r.json();
    assert_eq!(applied["changed"], true, "{applied}");
    let app_id = item(&applied, "apps.web")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let db_id = item(&applied, "databases.main")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let cache_id = item(&applied, "redis.cache")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let first = item(&applied, "apps.web")["deploymentId"]
        .as_str()
        .unwrap()
        .to_owned();
    let live = env.settled(&app_id, &first).await;
    assert_eq!(live["status"], "live", "{live}");
    let app = c.get(&format!("/apps/{app_id}")).await.json();
    assert_eq!(app["projectId"], applied["project"]["id"], "{app}");
    let history = c.get(&format!("/apps/{app_id}/deployments")).await.json();
    assert_eq!(
        history["items"].as_array().unwrap().len(),
        1,
        "one deployment: {history}"
    );

    // The app's variables are the resolved references.
    let db_uri = c
        .get(&format!("/databases/{db_id}/connection"))
        .await
        .json()["uri"]
        .as_str()
        .unwrap()
        .to_owned();
    let cache_uri = c
        .get(&format!("/caches/{cache_id}/connection"))
        .await
        .json()["uri"]
        .as_str()
        .unwrap()
        .to_owned();
    for (key, value) in [
        ("DATABASE_URL", db_uri.as_str()),
        ("REDIS_URL", cache_uri.as_str()),
        ("GREETING", "hi"),
    ] {
        let r = c
            .get(&format!(
                "/apps/{app_id}/env/verify?key={key}&expected={}",
                sha256(value)
            ))
            .await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.json()["matches"], true, "{key}: {}", r.text());
    }

    // Applied again unchanged: nothing is touched.
    let before = snapshot(&env, &app_id, &db_id, &cache_id).await;
    let started = Instant::now();
    let r = c.post("/manifest", stack(&env.v1, "hi")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    eprintln!(
        "manifest re-apply unchanged: {:.3} s",
        started.elapsed().as_secs_f64()
    );
    let again = r.json();
    assert_eq!(again["changed"], false, "{again}");
    assert_eq!(again["summary"]["unchanged"], 3, "{again}");
    assert!(
        item(&again, "apps.web").get("deploymentId").is_none(),
        "{again}"
    );
    assert_eq!(snapshot(&env, &app_id, &db_id, &cache_id).await, before);

    // A change, planned (nothing moves), then applied.
    let changed = stack(&env.v2, "hello");
    let r = c.post("/manifest/plan", changed.clone()).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let plan = r.json();
    assert_eq!(item(&plan, "apps.web")["action"], "update", "{plan}");
    assert_eq!(
        item(&plan, "databases.main")["action"],
        "unchanged",
        "{plan}"
    );
    let image = field(&plan, "apps.web", "image");
    assert_eq!(
        (
            image["action"].as_str(),
            image["from"].as_str(),
            image["to"].as_str()
        ),
        (Some("update"), Some(env.v1.as_str()), Some(env.v2.as_str()))
    );
    assert_eq!(field(&plan, "apps.web", "env.GREETING")["action"], "update");
    assert_eq!(
        field(&plan, "apps.web", "env.DATABASE_URL")["action"],
        "unchanged"
    );
    assert_eq!(field(&plan, "apps.web", "env.DATABASE_URL")["known"], true);
    assert_eq!(
        snapshot(&env, &app_id, &db_id, &cache_id).await,
        before,
        "the plan changed nothing"
    );
    let r = c.post("/manifest", changed.clone()).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let done = r.json();
    assert_eq!(done["changed"], true, "{done}");
    let second = item(&done, "apps.web")["deploymentId"]
        .as_str()
        .unwrap()
        .to_owned();
    let live = env.settled(&app_id, &second).await;
    assert_eq!(
        (live["status"].as_str(), live["image"].as_str()),
        (Some("live"), Some(env.v2.as_str())),
        "{live}"
    );
    let r = c.post("/manifest/plan", changed.clone()).await;
    assert_eq!(
        r.json()["summary"]["unchanged"],
        3,
        "converged: {}",
        r.text()
    );

    // What cannot change is refused before anything is done; what the
    // manifest no longer names is listed for pruning.
    let mut fixed = changed.clone();
    fixed["apps"][0]["port"] = json!(9999);
    let r = c.post("/manifest", fixed).await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert!(r.text().contains("apps[0].port"), "{}", r.text());
    let mut without = changed.clone();
    without["apps"] = json!([]);
    let r = c.post("/manifest/plan", without).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let plan = r.json();
    assert_eq!(
        item(&plan, "apps.web")["action"],
        "delete-if-pruned",
        "{plan}"
    );
    assert_eq!(item(&plan, "apps.web")["id"], app_id.as_str());
    let history = c.get(&format!("/apps/{app_id}/deployments")).await.json();
    let last = id(&history["items"][0]);
    assert_eq!(last, second, "no deployment since: {history}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_manifests_are_refused_naming_the_field() {
    let server = crate::start(Backend::Sqlite).await;
    let c = server.client();
    let refused = |r: &plateau_testkit::Response| -> Vec<(String, String)> {
        assert_eq!(r.status, 400, "{}", r.text());
        r.json()["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["field"].as_str().unwrap().to_owned(),
                    e["message"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    for path in ["/manifest", "/manifest/plan"] {
        let r = c
            .post(path, json!({
                "project": "",
                "extra": 1,
                "databases": [{ "name": "d", "memoryMb": 1 }],
                "apps": [{ "name": "bad name", "image": "" }, { "name": "web", "image": "r/web:1",
                    "env": { "DATABASE_URL": "${{ databases.main.uri }}", "N": 1, "X": "${{ databases.d.pass }}" } }],
            }))
            .await;
        let fields: Vec<String> = refused(&r).into_iter().map(|(f, _)| f).collect();
        for want in [
            "project",
            "extra",
            "databases[0].memoryMb",
            "apps[0].name",
            "apps[0].image",
            "apps[1].env.N",
            "apps[1].env.X",
        ] {
            assert!(fields.contains(&want.to_owned()), "{want} in {fields:?}");
        }
        // References are checked once the fields are valid.
        let r = c
            .post(
                path,
                json!({ "project": "p", "apps": [{ "name": "web", "image": "r/web:1",
                "env": { "DATABASE_URL": "${{ databases.main.uri }}" } }] }),
            )
            .await;
        let errors = refused(&r);
        assert_eq!(errors[0].0, "apps[0].env.DATABASE_URL", "{errors:?}");
        assert!(
            errors[0].1.contains("no databases named \"main\""),
            "{errors:?}"
        );
        // A cycle is named.
        let r = c
            .post(
                path,
                json!({ "project": "p", "apps": [
                { "name": "a", "image": "r/a:1", "env": { "B": "${{ apps.b.url }}" } },
                { "name": "b", "image": "r/b:1", "env": { "A": "https://${{ apps.a.id }}" } },
            ] }),
            )
            .await;
        let errors = refused(&r);
        assert!(
            errors[0].1.contains("apps.a -> apps.b -> apps.a"),
            "{errors:?}"
        );
    }
    // A token cannot make through a manifest what it could not make itself.
    let token = crate::mint(&server, json!({ "scopes": ["manifest:write"] })).await;
    let r = server
        .client()
        .with_token(&token)
        .post("/manifest", json!({ "project": "p", "apps": [] }))
        .await;
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(r.json()["scope"], "projects:write", "{}", r.text());
    assert_eq!(r.json()["item"], "project", "{}", r.text());
    assert_eq!(r.json()["applied"], json!([]), "{}", r.text());
    let projects = c.get("/projects").await.json();
    assert_eq!(
        projects["items"].as_array().unwrap().len(),
        1,
        "nothing made: {projects}"
    );
}
