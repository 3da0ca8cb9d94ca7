//! High availability: when the leader is killed, the sentinels promote the
//! replica, clients that ask the sentinels or keep the stable `uri` write
//! again, and the host brings the old leader back as a replica.

use std::time::Duration;

use plateau_testkit::Backend;
use redis::AsyncCommands as _;
use serde_json::json;

use super::{Processes, cli_out, connection, create, eventually, through_sentinels};
use crate::start;

crate::on_both_backends!(sentinels_promote_a_replica_when_the_leader_dies);

/// A `key value` field of a flat redis-cli reply (one item per line).
fn field(reply: &str, name: &str) -> Option<String> {
    let lines: Vec<&str> = reply.lines().collect();
    lines
        .iter()
        .position(|l| *l == name)
        .and_then(|i| lines.get(i + 1))
        .map(|v| (*v).to_owned())
}

async fn sentinels_promote_a_replica_when_the_leader_dies(backend: Backend) {
    let s = start(backend).await;
    let _processes = Processes::of(&s);
    let c = s.client();
    let cache = create(&c, json!({ "name": "ha", "replicas": 1 })).await;
    let id = cache["id"].as_str().unwrap().to_owned();
    let conn = connection(&c, &id).await;
    // The sentinels know the replica and each other before anything dies.
    let (sentinel_host, sentinel_port) = conn.sentinels[0].clone();
    assert_eq!(sentinel_host, conn.host);
    let ask = |args: &[&str]| {
        let out = super::cli(&conn, sentinel_port, &conn.password, args);
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    eventually(
        "the sentinels to know each other",
        Duration::from_secs(30),
        || {
            let master = ask(&["SENTINEL", "MASTER", &conn.master_name]);
            let ready = field(&master, "num-other-sentinels").as_deref() == Some("2")
                && field(&master, "num-slaves").as_deref() == Some("1");
            async move { ready.then_some(()) }
        },
    )
    .await;

    // The endpoint's configuration holds the host's admin password: only
    // the cluster's own user reads it.
    let proxy_conf = s
        .data_dir
        .path()
        .join(format!("caches/{id}/endpoint/haproxy.cfg"));
    let meta = std::fs::metadata(&proxy_conf).unwrap();
    use std::os::unix::fs::MetadataExt as _;
    assert_eq!(meta.mode() & 0o777, 0o600, "{}", proxy_conf.display());
    let owner = std::fs::metadata(proxy_conf.parent().unwrap().parent().unwrap())
        .unwrap()
        .uid();
    assert_eq!(meta.uid(), owner, "owned by the cluster's user");

    let mut leader = through_sentinels(&conn).await.unwrap();
    let () = leader.set("before", "1").await.unwrap();
    let acked: i64 = redis::cmd("WAIT")
        .arg(1)
        .arg(5000)
        .query_async(&mut leader)
        .await
        .unwrap();
    assert_eq!(acked, 1, "the replica has the write");
    super::kill_described(&cli_out(&conn, &["INFO", "server"]));

    // Writes resume on the promoted replica, found through the sentinels.
    let mut promoted = eventually(
        "writes on the promoted replica",
        Duration::from_secs(60),
        || {
            let conn = &conn;
            async move {
                let mut r = through_sentinels(conn).await.ok()?;
                let set: redis::RedisResult<()> = r.set("after", "2").await;
                set.ok().map(|()| r)
            }
        },
    )
    .await;
    let before: String = promoted.get("before").await.unwrap();
    assert_eq!(before, "1");
    let now = connection(&c, &id).await;
    assert_ne!(
        now.leader, conn.leader,
        "the connection names the new leader"
    );
    assert_eq!(now.port, conn.port, "and keeps its stable endpoint");
    // The stable endpoint leads to the new leader: a client that kept the
    // uri writes again.
    let mut stable = eventually("writes through the uri", Duration::from_secs(30), || {
        let conn = &conn;
        async move {
            let mut r = super::direct(conn, conn.port).await.ok()?;
            let set: redis::RedisResult<()> = r.set("through", "uri").await;
            set.ok().map(|()| r)
        }
    })
    .await;
    let before: String = stable.get("before").await.unwrap();
    assert_eq!(before, "1");

    // The host restarts the dead leader as the new leader's replica.
    eventually(
        "the old leader back as a replica",
        Duration::from_secs(60),
        || {
            let c = &c;
            let id = &id;
            async move {
                let m = c.get(&format!("/caches/{id}/metrics")).await.json();
                (m["connectedReplicas"] == 1).then_some(())
            }
        },
    )
    .await;
    // Connected is not yet in sync: the replica may still be loading the
    // new leader's data.
    let mut old = eventually(
        "the old leader has the new leader's writes",
        Duration::from_secs(30),
        || {
            let conn = &conn;
            async move {
                let mut old = super::direct(conn, conn.leader.1).await.ok()?;
                let after: Option<String> = old.get("after").await.ok()?;
                (after.as_deref() == Some("2")).then_some(old)
            }
        },
    )
    .await;
    let role: redis::Value = redis::cmd("ROLE").query_async(&mut old).await.unwrap();
    assert!(format!("{role:?}").contains("slave"), "{role:?}");
    eventually("the cache running again", Duration::from_secs(30), || {
        let c = &c;
        let id = &id;
        async move {
            let v = c.get(&format!("/caches/{id}")).await.json();
            (v["status"] == "running").then_some(())
        }
    })
    .await;
}
