//! Snapshots outlive their cache (issue 29, section 6): on the free plan
//! (one cache) a deleted cache's snapshot stays listed, counted against
//! the organisation's storage, restores into a new cache and replaces the
//! keys of an existing one; another organisation cannot reach it.

use plateau_testkit::Backend;
use redis::AsyncCommands as _;
use serde_json::json;

use super::{Processes, connection, create, direct};
use crate::{create_org, start};

crate::on_both_backends!(a_snapshot_outlives_its_cache_and_restores_into_another);

async fn keys(conn: &super::Conn) -> Vec<String> {
    let mut r = direct(conn, conn.port).await.unwrap();
    let mut keys: Vec<String> = r.keys("*").await.unwrap();
    keys.sort();
    keys
}

async fn a_snapshot_outlives_its_cache_and_restores_into_another(backend: Backend) {
    let s = start(backend).await;
    let _processes = Processes::of(&s);
    let token = create_org(&s, "kept", "free").await;
    let c = s.client().with_token(&token);
    let a = create(&c, json!({ "name": "a", "replicas": 0 })).await;
    let a_id = a["id"].as_str().unwrap().to_owned();
    let conn_a = connection(&c, &a_id).await;
    let mut r = direct(&conn_a, conn_a.port).await.unwrap();
    let () = r.set("kept:1", "one").await.unwrap();
    let () = r.set_ex("kept:ttl", "two", 3600).await.unwrap();
    let snap = c
        .post(&format!("/caches/{a_id}/snapshots"), json!({}))
        .await;
    assert_eq!(snap.status, 201, "{}", snap.text());
    let snap = snap.json();
    let snap_id = snap["id"].as_str().unwrap().to_owned();
    let size = snap["sizeBytes"].as_i64().unwrap();
    let stored_before = c.get("/usage").await.json()["storage"]["bytes"]
        .as_i64()
        .unwrap();

    // Deleted, the cache leaves its snapshot listed with an expiry, and
    // counted against the organisation's storage.
    super::delete(&c, &a_id).await;
    let listed = c.get("/caches/snapshots").await.json();
    let item = &listed["items"][0];
    assert_eq!(item["id"], snap_id.as_str(), "{listed}");
    assert_eq!(item["cacheName"], "a", "{listed}");
    assert!(item["expiresAt"].is_string(), "{listed}");
    let stored = c.get("/usage").await.json()["storage"]["bytes"]
        .as_i64()
        .unwrap();
    assert_eq!(stored, stored_before + size);

    // The one cache the free plan allows, made from it.
    let b = c
        .post(
            &format!("/caches/snapshots/{snap_id}/restore"),
            json!({ "name": "b" }),
        )
        .await;
    assert_eq!(b.status, 201, "{}", b.text());
    let b = c
        .wait_running(&format!("/caches/{}", b.json()["id"].as_str().unwrap()))
        .await;
    assert_eq!(b["restoredFrom"], snap_id.as_str());
    assert_eq!(b["replicas"], 0, "the source's settings: {b}");
    let b_id = b["id"].as_str().unwrap().to_owned();
    let conn_b = connection(&c, &b_id).await;
    assert_eq!(keys(&conn_b).await, ["kept:1", "kept:ttl"]);

    // Into an existing cache: its keys are replaced by the snapshot's.
    let mut rb = direct(&conn_b, conn_b.port).await.unwrap();
    let () = rb.set("kept:1", "changed").await.unwrap();
    let () = rb.set("extra", "gone after the restore").await.unwrap();
    let () = rb.del("kept:ttl").await.unwrap();
    let restored = c
        .post(
            &format!("/caches/{b_id}/restore"),
            json!({ "snapshotId": snap_id }),
        )
        .await;
    assert_eq!(restored.status, 200, "{}", restored.text());
    assert_eq!(keys(&conn_b).await, ["kept:1", "kept:ttl"]);
    let one: String = rb.get("kept:1").await.unwrap();
    assert_eq!(one, "one");
    let ttl: i64 = rb.ttl("kept:ttl").await.unwrap();
    assert!(
        ttl > 3000 && ttl <= 3600,
        "the time to live comes along: {ttl}"
    );
    let missing = c
        .post(
            &format!("/caches/{b_id}/restore"),
            json!({ "snapshotId": "" }),
        )
        .await;
    assert_eq!(missing.status, 400, "{}", missing.text());
    assert!(missing.text().contains("snapshotId"), "{}", missing.text());

    // Another organisation reaches neither the snapshot nor the cache.
    let other = s
        .client()
        .with_token(&create_org(&s, "other", "free").await);
    let theirs = create(&other, json!({ "name": "theirs", "replicas": 0 })).await;
    let theirs_id = theirs["id"].as_str().unwrap();
    let stolen = other
        .post(
            &format!("/caches/{theirs_id}/restore"),
            json!({ "snapshotId": snap_id }),
        )
        .await;
    // Into its own cache: the snapshot is as absent as one never made.
    assert_eq!(
        (stolen.status, stolen.json()["errors"][0]["field"].as_str()),
        (400, Some("snapshotId")),
        "{}",
        stolen.text()
    );
    let stolen = other
        .post(
            &format!("/caches/snapshots/{snap_id}/restore"),
            json!({ "name": "stolen" }),
        )
        .await;
    assert_eq!(stolen.status, 404, "{}", stolen.text());
    assert_eq!(
        other.get("/caches/snapshots").await.json()["items"],
        json!([])
    );
    assert_eq!(
        other
            .delete(&format!("/caches/snapshots/{snap_id}"))
            .await
            .status,
        404
    );

    // Deleted now, it leaves the storage count.
    let gone = c.delete(&format!("/caches/snapshots/{snap_id}")).await;
    assert_eq!(gone.status, 200, "{}", gone.text());
    let stored = c.get("/usage").await.json()["storage"]["bytes"]
        .as_i64()
        .unwrap();
    assert_eq!(stored, stored_before);
    assert_eq!(c.get("/caches/snapshots").await.json()["items"], json!([]));
}
