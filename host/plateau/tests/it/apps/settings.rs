//! An app's environment (sealed, names only, verified by digest, a change
//! redeploys), its scale and its resources (clamped to the plan).

use plateau_testkit::Backend;
use serde_json::json;
use sha2::{Digest as _, Sha256};

use super::{Apps, Edge, id, slug};
use crate::on_both_backends;

on_both_backends!(env_scale_and_resources);

fn sha256_hex(s: &str) -> String {
    hex::encode(Sha256::digest(s.as_bytes()))
}

async fn env_scale_and_resources(backend: Backend) {
    let env = Apps::start(backend).await;
    let c = env.client();
    let app = env.deployed("Settings", &env.v1).await;
    let (app_id, slug) = (id(&app), slug(&app));
    let edge = Edge::new(&env.server, &slug);
    let path = format!("/apps/{app_id}/env");

    // The map form saves the valid entries and reports the others.
    let r = c
        .post(
            &path,
            json!({ "env": { "GREETING": "bonjour", "1BAD": "x", "NUM": 3 } }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let change = r.json();
    assert_eq!(change["keys"], json!(["GREETING"]));
    let refused: Vec<&str> = change["invalid"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["entry"].as_str().unwrap())
        .collect();
    assert_eq!(refused, ["1BAD", "NUM"]);
    // The change redeploys the live component.
    let redeploy = &change["deployment"];
    assert_eq!(redeploy["cause"], "env");
    let settled = env.settled(&app_id, &id(redeploy)).await;
    assert_eq!(settled["status"], "live", "{settled}");
    edge.until_body("hello from v1, bonjour").await;

    // Dotenv text, with a line it cannot read.
    let r = c
        .post(
            &path,
            json!({ "env": "# comment\nSECRET_TOKEN=\"s3cret value\"\nnot a line\n" }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["keys"], json!(["SECRET_TOKEN"]));
    assert_eq!(r.json()["invalid"][0]["entry"], "line 3");
    env.settled(&app_id, &id(&r.json()["deployment"])).await;

    // Names only, never values.
    let listed = c.get(&path).await;
    assert_eq!(listed.status, 200);
    let listed_json = listed.json();
    let keys: Vec<&str> = listed_json["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["GREETING", "SECRET_TOKEN"]);
    assert!(!listed.text().contains("s3cret") && !listed.text().contains("bonjour"));
    let events = c.get("/events?limit=200").await.text();
    assert!(!events.contains("s3cret") && !events.contains("bonjour"));

    // verify compares a digest with the running replicas' value.
    let verify = |key: &str, digest: String| {
        let c = c.clone();
        let url = format!("/apps/{app_id}/env/verify?key={key}&expected={digest}");
        async move { c.get(&url).await }
    };
    let r = verify("SECRET_TOKEN", sha256_hex("s3cret value")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["matches"], true);
    assert!(!r.text().contains("s3cret"));
    let r = verify("SECRET_TOKEN", sha256_hex("guess")).await;
    assert_eq!(r.json()["matches"], false);
    let r = verify("MISSING", sha256_hex("")).await;
    assert_eq!(r.json()["matches"], false);
    let r = verify("SECRET_TOKEN", "abc".to_owned()).await;
    assert_eq!(r.status, 400, "{}", r.text());
    // verify needs apps:write.
    let reader = crate::mint_for(&env, &["apps:read"]).await;
    let r = plateau_testkit::Client::new(&env.server.url)
        .with_token(&reader)
        .get(&format!(
            "/apps/{app_id}/env/verify?key=GREETING&expected={}",
            sha256_hex("x")
        ))
        .await;
    assert_eq!(r.status, 403, "{}", r.text());

    // Removing a variable redeploys without it.
    let r = c.delete(&format!("{path}?key=GREETING")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    env.settled(&app_id, &id(&r.json()["deployment"])).await;
    edge.until_body("hello from v1").await;
    let r = c.delete(&format!("{path}?key=GREETING")).await;
    assert_eq!(r.status, 404, "{}", r.text());

    // Scale within the plan (pro: 4 replicas).
    let scale = format!("/apps/{app_id}/scale");
    assert_eq!(
        c.get(&scale).await.json(),
        json!({ "replicas": 1, "maxReplicas": 4 })
    );
    let r = c.put(&scale, json!({ "replicas": 3 })).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(c.get(&scale).await.json()["replicas"], 3);
    let r = c.put(&scale, json!({ "replicas": 5 })).await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(r.json()["code"], "plan_limit_reached");
    let r = c.put(&scale, json!({ "replicas": 0 })).await;
    assert_eq!(r.status, 400, "{}", r.text());

    // Resources are clamped to the plan (pro: 2048 MB, 2000 milli-CPU).
    let res = format!("/apps/{app_id}/resources");
    let r = c
        .put(&res, json!({ "memoryMb": 100000, "milliCpu": 500 }))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.json(),
        json!({ "memoryMb": 2048, "milliCpu": 500, "maxMemoryMb": 2048, "maxMilliCpu": 2000 })
    );
    assert_eq!(c.get(&res).await.json()["memoryMb"], 2048);
    let detail = c.get(&format!("/apps/{app_id}")).await.json();
    assert_eq!(detail["memoryMb"], 2048);
    assert_eq!(detail["replicas"], 3);
    // The app still serves under its new limits.
    edge.until_body("hello from v1").await;
}
