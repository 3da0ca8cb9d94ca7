//! The `/caches` API: settings, the connection with its password, the
//! customer's user and what ACL denies it, rotation, metrics, logs,
//! deletion, the plan's ceiling, scopes and tenants.

use std::time::Duration;

use plateau_testkit::Backend;
use redis::AsyncCommands as _;
use serde_json::json;

use super::{Processes, change, cli, cli_out, connection, create, delete, direct, eventually};
use crate::{create_org, event_types, mint, start};

crate::on_both_backends!(lifecycle_over_tls, plan_scopes_and_tenants);

async fn lifecycle_over_tls(backend: Backend) {
    let s = start(backend).await;
    let _processes = Processes::of(&s);
    let c = s.client();
    let doc = c.get("/openapi.json").await.json();
    assert_eq!(
        doc["paths"]["/caches/{id}/snapshots/{snapshotId}/restore"]["post"]["security"][0]["bearer"],
        json!(["cache:write"])
    );
    assert_eq!(
        doc["paths"]["/caches/{id}/connection"]["get"]["security"][0]["bearer"],
        json!(["cache:read"])
    );
    let cache = create(
        &c,
        json!({ "name": "sessions", "memoryMb": 32, "evictionPolicy": "allkeys-lru" }),
    )
    .await;
    assert_eq!(
        (
            &cache["status"],
            &cache["version"],
            &cache["tls"],
            &cache["replicas"],
            &cache["persistence"],
            &cache["evictionPolicy"]
        ),
        (
            &json!("running"),
            &json!("7"),
            &json!(true),
            &json!(1),
            &json!("none"),
            &json!("allkeys-lru")
        )
    );
    let id = cache["id"].as_str().unwrap().to_owned();
    let conn = connection(&c, &id).await;
    assert_eq!(conn.sentinels.len(), 3);
    assert_eq!(cli_out(&conn, &["SET", "greeting", "hello"]), "OK");
    assert_eq!(cli_out(&conn, &["GET", "greeting"]), "hello");
    for denied in [
        &["CONFIG", "GET", "maxmemory"][..],
        &["DEBUG", "SLEEP", "0"],
        &["SHUTDOWN", "NOSAVE"],
        &["MODULE", "LIST"],
        &["ACL", "LIST"],
        &["REPLICAOF", "NO", "ONE"],
    ] {
        let out = cli_out(&conn, denied);
        // DEBUG is also off in Redis 7's own configuration.
        let refused = out.starts_with("NOPERM") || out.starts_with("ERR DEBUG command not allowed");
        assert!(refused, "{denied:?} answered {out}");
    }
    let wrong = cli(&conn, conn.port, "not-the-password", &["GET", "greeting"]);
    assert!(
        !String::from_utf8_lossy(&wrong.stdout).contains("hello"),
        "a wrong password reads nothing"
    );
    // The redis crate, over rustls, trusting the cache's CA.
    let mut r = direct(&conn, conn.port).await.unwrap();
    let n: i64 = r.incr("visits", 5).await.unwrap();
    assert_eq!(n, 5);
    let got: String = r.get("greeting").await.unwrap();
    assert_eq!(got, "hello");
    let _: Option<String> = r.get("absent").await.unwrap();

    let m = c.get(&format!("/caches/{id}/metrics")).await.json();
    assert_eq!(m["keys"], 2, "{m}");
    assert_eq!(m["maxmemoryBytes"], 32 << 20, "{m}");
    assert!(m["keyspaceHits"].as_u64().unwrap() >= 2, "{m}");
    assert!(m["keyspaceMisses"].as_u64().unwrap() >= 1, "{m}");
    assert_eq!(m["connectedReplicas"], 1, "{m}");
    assert!(m["connectedClients"].as_u64().unwrap() >= 1, "{m}");
    assert!(m["replicationOffset"].as_u64().unwrap() > 0, "{m}");

    let changed = change(
        &c,
        &id,
        json!({ "memoryMb": 48, "evictionPolicy": "allkeys-lfu" }),
    )
    .await;
    assert_eq!(changed["memoryMb"], 48);
    let m = c.get(&format!("/caches/{id}/metrics")).await.json();
    assert_eq!(m["maxmemoryBytes"], 48 << 20, "{m}");
    // Replicas scale down and back up; the new replica catches up.
    for (replicas, connected) in [(0, 0), (1, 1)] {
        let changed = change(&c, &id, json!({ "replicas": replicas })).await;
        assert_eq!(changed["replicas"], replicas);
        eventually(
            &format!("{connected} connected replicas"),
            Duration::from_secs(30),
            || {
                let c = &c;
                let id = &id;
                async move {
                    let m = c.get(&format!("/caches/{id}/metrics")).await.json();
                    (m["connectedReplicas"] == connected).then_some(())
                }
            },
        )
        .await;
    }
    let detail = c.get(&format!("/caches/{id}")).await.json();
    assert_eq!(detail["replicas"], 1, "{detail}");
    let r2 = c
        .patch(&format!("/caches/{id}"), json!({ "tls": false }))
        .await;
    assert_eq!(r2.status, 400, "tls is chosen at creation: {}", r2.text());

    // Rotation: the old password stops working, the new one works.
    change(&c, &id, json!({ "rotatePassword": true })).await;
    let rotated = connection(&c, &id).await;
    assert_ne!(rotated.password, conn.password);
    assert_eq!(cli_out(&rotated, &["GET", "greeting"]), "hello");
    let old = cli(&conn, conn.port, &conn.password, &["GET", "greeting"]);
    assert!(!String::from_utf8_lossy(&old.stdout).contains("hello"));
    assert!(
        direct(&conn, conn.port).await.is_err(),
        "the old password is refused"
    );

    let logs = c.get(&format!("/caches/{id}/logs?lines=20")).await.json();
    let processes: Vec<&str> = logs["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["process"].as_str().unwrap())
        .collect();
    assert!(
        processes.contains(&"node0") && processes.contains(&"sentinel2"),
        "{logs}"
    );
    let secret_in_logs = logs.to_string().contains(&rotated.password);
    assert!(!secret_in_logs);
    assert_eq!(
        c.get(&format!("/caches/{id}/logs?lines=0")).await.status,
        400
    );

    let list = c.get("/caches?limit=10").await.json();
    assert_eq!(list["total"], 1, "{list}");
    delete(&c, &id).await;
    let gone = cli(&rotated, rotated.port, &rotated.password, &["PING"]);
    assert!(!String::from_utf8_lossy(&gone.stdout).contains("PONG"));
    assert!(!s.data_dir.path().join("caches").join(&id).exists());
    let events = c.get("/events?limit=50").await.json();
    let types = event_types(&events);
    for kind in [
        "cache.created",
        "cache.updated",
        "cache.password_rotated",
        "cache.deleted",
    ] {
        assert!(types.contains(&kind), "{kind} in {types:?}");
    }
    assert!(!events.to_string().contains(&rotated.password));
}

async fn plan_scopes_and_tenants(backend: Backend) {
    let s = start(backend).await;
    let _processes = Processes::of(&s);
    let c = s.client();
    // Settings are checked against the plan before anything starts.
    let r = c
        .post("/caches", json!({ "name": "x", "replicas": 2 }))
        .await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (409, "plan_limit_reached"),
        "{}",
        r.text()
    );
    for (body, field) in [
        (json!({ "name": "x", "replicas": -1 }), "replicas"),
        (json!({ "name": "x", "memoryMb": 4 }), "memoryMb"),
        (
            json!({ "name": "x", "evictionPolicy": "volatile-ttl" }),
            "evictionPolicy",
        ),
        (
            json!({ "name": "x", "persistence": "always" }),
            "persistence",
        ),
    ] {
        let r = c.post("/caches", body).await;
        assert_eq!(r.status, 400, "{}", r.text());
        assert_eq!(r.json()["errors"][0]["field"], field, "{}", r.text());
    }
    let ours = create(&c, json!({ "name": "ours", "replicas": 0 })).await;
    let id = ours["id"].as_str().unwrap().to_owned();
    // The free plan has one cache instance.
    let r = c.post("/caches", json!({ "name": "second" })).await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (409, "plan_limit_reached"),
        "{}",
        r.text()
    );

    let reader = mint(&s, json!({ "name": "ro", "scopes": ["cache:read"] })).await;
    let ro = s.client().with_token(&reader);
    assert_eq!(ro.get(&format!("/caches/{id}")).await.status, 200);
    let r = ro.post("/caches", json!({ "name": "nope" })).await;
    assert_eq!((r.status, r.code().as_str()), (403, "missing_scope"));
    assert_eq!(ro.delete(&format!("/caches/{id}")).await.status, 403);

    // Another organisation sees nothing of ours, and its password opens
    // nothing of ours.
    let other = s.client().with_token(&create_org(&s, "other", "pro").await);
    for path in [
        format!("/caches/{id}"),
        format!("/caches/{id}/connection"),
        format!("/caches/{id}/metrics"),
        format!("/caches/{id}/snapshots"),
    ] {
        assert_eq!(other.get(&path).await.status, 404, "{path}");
    }
    assert_eq!(other.delete(&format!("/caches/{id}")).await.status, 404);
    assert_eq!(other.get("/caches").await.json()["total"], 0);
    let theirs = create(&other, json!({ "name": "theirs", "replicas": 0 })).await;
    let theirs = connection(&other, theirs["id"].as_str().unwrap()).await;
    let mine = connection(&c, &id).await;
    assert_eq!(cli_out(&mine, &["SET", "secret", "42"]), "OK");
    let out = cli(&theirs, mine.port, &theirs.password, &["GET", "secret"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("42"), "{stdout}");
    assert_eq!(cli_out(&theirs, &["GET", "secret"]), "");
}
