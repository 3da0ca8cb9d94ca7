//! What a tenant holds of a cache: a `cache:read` token gets credentials
//! that only read (a SET is refused), and the Redis processes, which run
//! the tenant's Lua, run as the cluster's own unprivileged user in a
//! directory only it may enter, adopted again after a restart and gone
//! with the cache.

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::Path;

use plateau_testkit::{Backend, Client};
use serde_json::json;

use super::{Processes, cli_as, connection, create};
use crate::{mint, start};

crate::on_both_backends!(read_tokens_read_and_redis_runs_unprivileged);

/// The real uid of process `pid`, from `/proc/<pid>/status`.
fn uid_of(pid: &str) -> u32 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn pid_in(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("redis.pid"))
        .unwrap()
        .trim()
        .to_owned()
}

/// Whether the system knows the user `name`.
fn user_exists(name: &str) -> bool {
    std::process::Command::new("getent")
        .args(["passwd", name])
        .status()
        .unwrap()
        .success()
}

async fn read_tokens_read_and_redis_runs_unprivileged(backend: Backend) {
    let mut s = start(backend).await;
    let _processes = Processes::of(&s);
    let c = s.client();
    let cache = create(&c, json!({ "name": "isolated", "memoryMb": 16 })).await;
    let id = cache["id"].as_str().unwrap().to_owned();

    // The owner's token (cache:write) gets the cache's user, as before.
    let owner = connection(&c, &id).await;
    let answer = c.get(&format!("/caches/{id}/connection")).await.json();
    assert_eq!(
        (&answer["username"], &answer["readOnly"]),
        (&json!("app"), &json!(false))
    );
    let out = cli_as(&owner, "app", &owner.password, &["SET", "k", "v"]);
    assert_eq!(out, "OK");

    // A cache:read token gets the read-only user: it reads, it cannot write.
    let reader = mint(&s, json!({ "scopes": ["cache:read"] })).await;
    let r = Client::new(&s.url)
        .with_token(&reader)
        .get(&format!("/caches/{id}/connection"))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let read = r.json();
    assert_eq!(
        (&read["username"], &read["readOnly"]),
        (&json!("app-readonly"), &json!(true))
    );
    let password = read["password"].as_str().unwrap();
    assert_ne!(password, owner.password);
    assert_eq!(
        read["uri"],
        format!(
            "rediss://app-readonly:{password}@{}:{}",
            read["host"].as_str().unwrap(),
            read["port"]
        )
    );
    assert_eq!(cli_as(&owner, "app-readonly", password, &["GET", "k"]), "v");
    for write in [
        &["SET", "k", "overwritten"][..],
        &["DEL", "k"],
        &["EVAL", "return redis.call('SET', KEYS[1], 'x')", "1", "k"],
        &["FLUSHALL"],
    ] {
        let out = cli_as(&owner, "app-readonly", password, write);
        assert!(out.starts_with("NOPERM"), "{write:?} answered {out}");
    }
    assert_eq!(cli_as(&owner, "app", &owner.password, &["GET", "k"]), "v");

    // Every process runs as the cluster's own user, not root, in a
    // directory only that user enters.
    let cluster = s.data_dir.path().join("caches").join(&id);
    let meta = std::fs::metadata(&cluster).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o700);
    let leader = pid_in(&cluster.join("node0"));
    let uid = uid_of(&leader);
    assert_ne!(uid, 0, "redis-server runs as root");
    assert_eq!(meta.uid(), uid);
    for process in ["sentinel0", "sentinel1", "sentinel2"] {
        assert_eq!(uid_of(&pid_in(&cluster.join(process))), uid, "{process}");
    }

    // A restarted host adopts the processes as they run.
    s.restart().await;
    let c = s.client();
    assert_eq!(pid_in(&cluster.join("node0")), leader);
    let out = cli_as(&owner, "app", &owner.password, &["GET", "k"]);
    assert_eq!(out, "v");
    let again = c.get(&format!("/caches/{id}")).await;
    assert_eq!(again.json()["status"], "running", "{}", again.text());

    // The user (the tests run as root, so one per cluster) goes with the
    // cache.
    assert!(user_exists(&id));
    super::delete(&c, &id).await;
    assert!(!user_exists(&id), "the cache's user outlives it");
}
