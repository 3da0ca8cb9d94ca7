//! Snapshots and restores into new clusters, eviction under each policy,
//! and a restart of `plateau serve` that adopts the running clusters.

use std::time::Duration;

use plateau_testkit::Backend;
use redis::AsyncCommands as _;
use serde_json::json;

use super::{Processes, cli_out, connection, create, direct, eventually};
use crate::{create_org, start};

crate::on_both_backends!(snapshot_restore_and_adoption, eviction_policies);

fn pid_of(conn: &super::Conn) -> String {
    cli_out(conn, &["INFO", "server"])
        .lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .unwrap()
        .trim()
        .to_owned()
}

async fn snapshot_restore_and_adoption(backend: Backend) {
    let mut s = start(backend).await;
    let _processes = Processes::of(&s);
    let token = create_org(&s, "snaps", "pro").await;
    let c = s.client().with_token(&token);
    let a = create(&c, json!({ "name": "a", "replicas": 0 })).await;
    let a_id = a["id"].as_str().unwrap().to_owned();
    let conn_a = connection(&c, &a_id).await;
    let mut r = direct(&conn_a, conn_a.port).await.unwrap();
    let mut pipe = redis::pipe();
    for i in 0..500 {
        pipe.set(format!("key:{i}"), format!("value {i}")).ignore();
    }
    pipe.hset("profile", "name", "ada").ignore();
    let () = pipe.query_async(&mut r).await.unwrap();

    let snap = c
        .post(&format!("/caches/{a_id}/snapshots"), json!({}))
        .await;
    assert_eq!(snap.status, 201, "{}", snap.text());
    let snap = snap.json();
    assert!(snap["sizeBytes"].as_i64().unwrap() > 0, "{snap}");
    let snap_id = snap["id"].as_str().unwrap().to_owned();
    let () = r.set("key:after", "later").await.unwrap();
    let list = c.get(&format!("/caches/{a_id}/snapshots")).await.json();
    assert_eq!(list["items"][0]["id"], snap["id"], "{list}");

    let restored = c
        .post(
            &format!("/caches/{a_id}/snapshots/{snap_id}/restore"),
            json!({ "name": "b", "persistence": "rdb" }),
        )
        .await;
    assert_eq!(restored.status, 201, "{}", restored.text());
    let b = restored.json();
    assert_eq!(b["status"], "creating", "{b}");
    let b = c
        .wait_running(&format!("/caches/{}", b["id"].as_str().unwrap()))
        .await;
    assert_eq!(b["restoredFrom"], snap["id"]);
    assert_eq!(b["persistence"], "rdb");
    let b_id = b["id"].as_str().unwrap().to_owned();
    assert_ne!(b_id, a_id, "a restore makes a new cluster");
    let conn_b = connection(&c, &b_id).await;
    assert_ne!(conn_b.password, conn_a.password);
    let mut rb = direct(&conn_b, conn_b.port).await.unwrap();
    let size: i64 = redis::cmd("DBSIZE").query_async(&mut rb).await.unwrap();
    assert_eq!(size, 501);
    for i in [0, 250, 499] {
        let v: String = rb.get(format!("key:{i}")).await.unwrap();
        assert_eq!(v, format!("value {i}"));
    }
    let name: String = rb.hget("profile", "name").await.unwrap();
    assert_eq!(name, "ada");
    let later: Option<String> = rb.get("key:after").await.unwrap();
    assert_eq!(later, None, "writes after the snapshot are not in it");
    // The source's password opens nothing of the restored cluster.
    let other = super::cli(&conn_a, conn_b.port, &conn_a.password, &["GET", "key:1"]);
    assert!(!String::from_utf8_lossy(&other.stdout).contains("value 1"));
    // Unknown snapshots and another cache's snapshot ids answer 404.
    let r404 = c
        .post(
            &format!("/caches/{b_id}/snapshots/{snap_id}/restore"),
            json!({ "name": "c" }),
        )
        .await;
    assert_eq!(r404.status, 404, "{}", r404.text());

    // A restart of the server adopts the running processes.
    let pid_a = pid_of(&conn_a);
    s.restart().await;
    let c = s.client().with_token(&token);
    assert_eq!(pid_of(&conn_a), pid_a, "adopted, not restarted");
    let m = c.get(&format!("/caches/{a_id}/metrics")).await.json();
    assert_eq!(m["keys"], 502, "{m}");

    // A dead leader without replicas comes back in place, from its RDB.
    let pid_b = pid_of(&conn_b);
    assert!(
        std::process::Command::new("kill")
            .args(["-KILL", &pid_b])
            .status()
            .unwrap()
            .success()
    );
    let back = eventually("the restored cache back", Duration::from_secs(60), || {
        let conn_b = &conn_b;
        async move {
            let mut r = direct(conn_b, conn_b.port).await.ok()?;
            let v: Option<String> = r.get("key:7").await.ok()?;
            v
        }
    })
    .await;
    assert_eq!(back, "value 7");
    assert_ne!(pid_of(&conn_b), pid_b);

    super::delete(&c, &a_id).await;
    let gone = c.get(&format!("/caches/{a_id}/snapshots")).await;
    assert_eq!(gone.status, 404);
    // Its snapshot is kept for the retention period.
    let snapshots_dir = s.data_dir.path().join("cache-snapshots");
    let left: Vec<_> = walk(&snapshots_dir)
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(&a_id))
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Writes 10 KiB values (with a TTL when `ttl`) until 24 MiB went in;
/// how many batches of writes the cache refused.
async fn fill(r: &mut redis::aio::MultiplexedConnection, prefix: &str, ttl: bool) -> usize {
    let value = "x".repeat(10 * 1024);
    let mut refused = 0;
    for batch in 0..24 {
        let mut pipe = redis::pipe();
        for i in 0..100 {
            let key = format!("{prefix}:{batch}:{i}");
            if ttl {
                pipe.set_ex(key, &value, 3600);
            } else {
                pipe.set(key, &value);
            }
        }
        let replies: Vec<redis::RedisResult<()>> =
            match pipe.query_async::<Vec<redis::Value>>(r).await {
                Ok(values) => values.into_iter().map(|_| Ok(())).collect(),
                Err(e) => vec![Err(e)],
            };
        refused += replies.iter().filter(|r| r.is_err()).count();
    }
    refused
}

async fn eviction_policies(backend: Backend) {
    let s = start(backend).await;
    let _processes = Processes::of(&s);
    let c = s.client();
    let cache = create(&c, json!({ "name": "small", "replicas": 0, "memoryMb": 8 })).await;
    let id = cache["id"].as_str().unwrap().to_owned();
    let conn = connection(&c, &id).await;
    let mut r = direct(&conn, conn.port).await.unwrap();
    for policy in [
        "noeviction",
        "allkeys-lru",
        "allkeys-lfu",
        "allkeys-random",
        "volatile-lru",
    ] {
        super::change(&c, &id, json!({ "evictionPolicy": policy })).await;
        let () = redis::cmd("FLUSHALL").query_async(&mut r).await.unwrap();
        let evicted_before = c.get(&format!("/caches/{id}/metrics")).await.json()["evictedKeys"]
            .as_u64()
            .unwrap();
        let refused = fill(&mut r, policy, false).await;
        let m = c.get(&format!("/caches/{id}/metrics")).await.json();
        let evicted = m["evictedKeys"].as_u64().unwrap() - evicted_before;
        match policy {
            // Keys without a TTL are never evicted: writes are refused.
            "noeviction" | "volatile-lru" => {
                assert!(refused > 0, "{policy}: writes past maxmemory are refused");
                assert_eq!(evicted, 0, "{policy}: {m}");
            }
            _ => {
                assert_eq!(refused, 0, "{policy}: every write is taken");
                assert!(evicted > 0, "{policy}: {m}");
                assert!(m["keys"].as_u64().unwrap() < 2400, "{policy}: {m}");
            }
        }
        if policy == "volatile-lru" {
            let () = redis::cmd("FLUSHALL").query_async(&mut r).await.unwrap();
            let refused = fill(&mut r, "ttl", true).await;
            let m = c.get(&format!("/caches/{id}/metrics")).await.json();
            assert_eq!(refused, 0, "volatile-lru evicts keys with a TTL");
            assert!(m["evictedKeys"].as_u64().unwrap() > evicted_before, "{m}");
        }
    }
}
