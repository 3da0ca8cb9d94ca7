//! Config and secrets (`/config`, the config plugin): environments of a
//! project, keys with `${REFERENCES}` resolved at read time and cycles
//! refused naming the key, secrets absent from lists and read only with
//! `config:secrets` (each read audited), versions and rollback, and an app
//! linked to an environment: its replicas get the resolved values, and a
//! change redeploys it. Another organisation gets 404. One server, SQLite.

use std::time::{Duration, Instant};

use plateau_testkit::{Backend, Client};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::apps::{Apps, Edge, id, slug};

const ENV: &str = "/config/projects/shop/environments/production";

fn sha256_hex(s: &str) -> String {
    hex::encode(Sha256::digest(s.as_bytes()))
}

fn names(page: &Value, field: &str) -> Vec<String> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i[field].as_str().unwrap().to_owned())
        .collect()
}

async fn token(env: &Apps, scopes: &[&str]) -> Client {
    Client::new(&env.server.url).with_token(&crate::mint_for(env, scopes).await)
}

/// Waits until the app answers `body` at `/` (the redeployment the sync
/// started is live); prints how long it took.
async fn app_answers(edge: &Edge, body: &str, what: &str) {
    let started = Instant::now();
    crate::eventually(what, Duration::from_secs(120), || async {
        matches!(edge.get("/").await, Ok((200, b)) if b == body).then_some(())
    })
    .await;
    eprintln!("{what}: {:.1} s", started.elapsed().as_secs_f64());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_and_secrets() {
    let env = Apps::start(Backend::Sqlite).await;
    let c = env.client();

    // A project starts with three environments; custom ones are added.
    let r = c.post("/config/projects", json!({ "name": "shop" })).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = c.get("/config/projects/shop/environments").await;
    assert_eq!(
        names(&r.json(), "name"),
        ["development", "preview", "production"]
    );
    let r = c
        .post(
            "/config/projects/shop/environments",
            json!({ "name": "staging" }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = c
        .post(
            "/config/projects/shop/environments",
            json!({ "name": "Not A Slug" }),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["errors"][0]["field"], "name");

    // Keys, one a secret, others referring to it and to each other.
    let r = c
        .patch(
            &format!("{ENV}/keys"),
            json!({ "set": [
                { "key": "HOST", "value": "db.internal" },
                { "key": "PORT", "value": "5432" },
                { "key": "DB_PASSWORD", "value": "s3cret-pw", "secret": true },
                { "key": "DATABASE_URL", "value": "postgres://app:${DB_PASSWORD}@${HOST}:${PORT}/shop" },
                { "key": "GREETING", "value": "hola from ${HOST}" },
            ] }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["version"], 1);
    let r = c.get(&format!("{ENV}/keys/GREETING")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["value"], "hola from ${HOST}");
    assert_eq!(r.json()["computed"], "hola from db.internal");

    // A cycle is refused naming the key; so is a reference to nothing.
    let r = c
        .patch(
            &format!("{ENV}/keys"),
            json!({ "set": [
                { "key": "A", "value": "${B}" },
                { "key": "B", "value": "x${A}" },
            ] }),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["errors"][0]["field"], "A", "{}", r.text());
    assert!(r.text().contains("A -> B -> A"), "{}", r.text());
    let r = c
        .put(&format!("{ENV}/keys/HOST"), json!({ "value": "${HOST}" }))
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["errors"][0]["field"], "HOST");
    let r = c
        .put(&format!("{ENV}/keys/C"), json!({ "value": "${NOPE}" }))
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["errors"][0]["field"], "C");
    let r = c.delete(&format!("{ENV}/keys/HOST")).await;
    assert_eq!(r.status, 400, "removing a referenced key: {}", r.text());
    assert_eq!(
        c.get(ENV).await.json()["version"],
        1,
        "nothing refused was written"
    );

    // Lists never show a secret, nor a value holding one.
    let listed = c.get(&format!("{ENV}/keys")).await;
    assert_eq!(listed.status, 200, "{}", listed.text());
    assert!(!listed.text().contains("s3cret-pw"), "{}", listed.text());
    let items = listed.json()["items"].as_array().unwrap().clone();
    let item = |k: &str| items.iter().find(|i| i["key"] == k).unwrap().clone();
    assert_eq!(item("DB_PASSWORD")["secret"], true);
    assert_eq!(item("DB_PASSWORD")["value"], Value::Null);
    assert_eq!(item("DATABASE_URL")["computed"], Value::Null);
    assert_eq!(item("GREETING")["computed"], "hola from db.internal");

    // Reading a secret needs config:secrets; with it, it resolves.
    let reader = token(&env, &["config:read"]).await;
    for path in ["keys/DB_PASSWORD", "keys/DATABASE_URL", "values"] {
        let r = reader.get(&format!("{ENV}/{path}")).await;
        assert_eq!(r.status, 403, "{path}: {}", r.text());
        assert!(!r.text().contains("s3cret-pw"));
    }
    let r = reader.get(&format!("{ENV}/keys/GREETING")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let secrets = token(&env, &["config:read", "config:secrets"]).await;
    let r = secrets.get(&format!("{ENV}/keys/DB_PASSWORD")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["value"], "s3cret-pw");
    let r = secrets.get(&format!("{ENV}/keys/DATABASE_URL")).await;
    assert_eq!(
        r.json()["computed"],
        "postgres://app:s3cret-pw@db.internal:5432/shop"
    );
    let r = secrets.get(&format!("{ENV}/values")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["values"]["GREETING"], "hola from db.internal");

    // Every read of a secret is in the audit log, without the value.
    let audit = c.get("/events?type=config.secret.read&limit=100").await;
    assert_eq!(audit.status, 200, "{}", audit.text());
    let reads = audit.json()["items"].as_array().unwrap().clone();
    assert_eq!(reads.len(), 3, "{}", audit.text());
    assert!(
        reads
            .iter()
            .all(|e| e["data"]["keys"] == json!(["DB_PASSWORD"]))
    );
    assert!(!audit.text().contains("s3cret-pw"));

    // Versions and rollback.
    let r = c
        .put(&format!("{ENV}/keys/GREETING"), json!({ "value": "adios" }))
        .await;
    assert_eq!(r.json()["version"], 2, "{}", r.text());
    let r = c
        .post(&format!("{ENV}/rollback"), json!({ "version": 1 }))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["version"], 3);
    assert_eq!(r.json()["rollbackOf"], 1);
    assert_eq!(r.json()["set"], json!(["GREETING"]));
    let r = c.get(&format!("{ENV}/keys/GREETING")).await;
    assert_eq!(r.json()["computed"], "hola from db.internal");
    let r = c.get(&format!("{ENV}/versions")).await;
    let versions: Vec<u64> = r.json()["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_u64().unwrap())
        .collect();
    assert_eq!(versions, [3, 2, 1]);
    let r = c.get(&format!("{ENV}/versions/2")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(!r.text().contains("s3cret-pw"));
    let r = c
        .post(&format!("{ENV}/rollback"), json!({ "version": 9 }))
        .await;
    assert_eq!(r.status, 400, "{}", r.text());

    // An app linked to the environment gets its resolved values.
    let app = env.deployed("Configured", &env.v1).await;
    let (app_id, slug) = (id(&app), slug(&app));
    let edge = Edge::new(&env.server, &slug);
    let link_path = format!("{ENV}/apps/{app_id}");
    let writer = token(&env, &["config:write", "config:read"]).await;
    let r = writer.put(&link_path, json!({})).await;
    assert_eq!(r.status, 403, "linking needs apps:write: {}", r.text());
    let r = c.put(&link_path, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text());
    app_answers(
        &edge,
        "hello from v1, hola from db.internal",
        "the linked values live",
    )
    .await;
    let r = c
        .get(&format!(
            "/apps/{app_id}/env/verify?key=DATABASE_URL&expected={}",
            sha256_hex("postgres://app:s3cret-pw@db.internal:5432/shop")
        ))
        .await;
    assert_eq!(r.json()["matches"], true, "{}", r.text());
    let links = crate::until(&c, &format!("{ENV}/apps"), "the sync recorded", |p| {
        p["items"][0]["syncedVersion"] == 3
    })
    .await;
    assert_eq!(links["items"][0]["appId"], app_id.as_str());
    let changed = c.get("/events?type=app.env.changed&limit=50").await.text();
    assert!(changed.contains("config:shop/production"), "{changed}");
    assert!(!changed.contains("s3cret-pw"));

    // A change redeploys it; so does a rollback.
    let r = c
        .put(
            &format!("{ENV}/keys/GREETING"),
            json!({ "value": "hej ${PORT}" }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    app_answers(&edge, "hello from v1, hej 5432", "a change redeployed").await;
    let r = c
        .post(&format!("{ENV}/rollback"), json!({ "version": 3 }))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    app_answers(
        &edge,
        "hello from v1, hola from db.internal",
        "a rollback redeployed",
    )
    .await;
    let deployments = c.get(&format!("/apps/{app_id}/deployments")).await.json();
    let by_env = deployments["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["cause"] == "env")
        .count();
    assert_eq!(by_env, 3, "one redeployment per sync that changed values");

    // An environment with linked apps stays; unlinking removes the values.
    let r = c.delete(ENV).await;
    assert_eq!(r.status, 409, "{}", r.text());

    // Another organisation sees none of it, and cannot link our app.
    let other = Client::new(&env.server.url)
        .with_token(&crate::create_org(&env.server, "config-other", "pro").await);
    for path in [
        "/config/projects/shop".to_owned(),
        format!("{ENV}/keys"),
        format!("{ENV}/keys/DB_PASSWORD"),
        format!("{ENV}/values"),
        format!("{ENV}/versions"),
    ] {
        let r = other.get(&path).await;
        assert_eq!(r.status, 404, "{path}: {}", r.text());
    }
    let r = other
        .post("/config/projects", json!({ "name": "shop" }))
        .await;
    assert_eq!(r.status, 201, "names are per organisation: {}", r.text());
    let r = other.put(&link_path, json!({})).await;
    assert_eq!(r.status, 404, "another organisation's app: {}", r.text());
    let r = other.get(&format!("{ENV}/keys")).await;
    assert_eq!(r.json()["total"], 0);

    let r = c.delete(&link_path).await;
    assert_eq!(r.status, 204, "{}", r.text());
    app_answers(&edge, "hello from v1", "unlinking redeployed").await;
    let r = c.delete(ENV).await;
    assert_eq!(r.status, 204, "{}", r.text());
}
