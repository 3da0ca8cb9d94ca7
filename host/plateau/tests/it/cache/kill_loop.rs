//! What a failover loses: three writers increment counters through the
//! stable `uri` of a cache with two replicas, one confirming each write
//! with `WAIT 2` (every replica), one with `WAIT 1`, one not at all, while
//! the leader is SIGKILLed again and again (twice in a row once, the
//! second leader soon after its promotion). No write that every replica
//! confirmed may be lost; the figures of all three are printed (`WAIT 1`
//! holds across crashes, but a leader deposed while alive keeps a replica
//! for a moment, see the cache README).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use plateau_testkit::Backend;
use serde_json::json;

use super::{Conn, Processes, connection, create, direct, eventually, eventually_or};
use crate::{create_org, start};

/// One writer's tally.
#[derive(Default)]
struct Tally {
    /// Increments the cache acknowledged (and, with WAIT, a replica has).
    acked: AtomicU64,
    /// Commands refused or cut (NOREPLICAS, READONLY, a closed connection).
    failed: AtomicU64,
}

/// Increments `key` through the stable uri until `stop`, confirming each
/// write with `WAIT n 1000` if `wait` is `Some(n)`.
async fn writer(
    conn: Arc<Conn>,
    key: &'static str,
    wait: Option<i64>,
    tally: Arc<Tally>,
    stop: Arc<AtomicBool>,
) {
    let limit = Duration::from_secs(3);
    let mut r = None;
    while !stop.load(Ordering::Relaxed) {
        let mut c = match r.take() {
            Some(c) => c,
            None => match tokio::time::timeout(limit, direct(&conn, conn.port)).await {
                Ok(Ok(c)) => c,
                _ => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let incr = redis::cmd("INCR").arg(key).clone();
        let done = tokio::time::timeout(limit, incr.query_async::<i64>(&mut c)).await;
        let mut ok = matches!(done, Ok(Ok(_)));
        if let (true, Some(n)) = (ok, wait) {
            let confirm = redis::cmd("WAIT").arg(n).arg(1000).clone();
            let done = tokio::time::timeout(limit, confirm.query_async::<i64>(&mut c)).await;
            ok = matches!(done, Ok(Ok(got)) if got >= n);
        }
        if ok {
            tally.acked.fetch_add(1, Ordering::Relaxed);
            r = Some(c);
        } else {
            tally.failed.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The leader's port as the first sentinel that answers names it.
async fn leader_port(conn: &Conn) -> Option<u16> {
    for (_, port) in &conn.sentinels {
        let Ok(mut s) = direct(conn, *port).await else {
            continue;
        };
        let answer: redis::RedisResult<Option<(String, u16)>> = redis::cmd("SENTINEL")
            .arg("get-master-addr-by-name")
            .arg(&conn.master_name)
            .query_async(&mut s)
            .await;
        if let Ok(Some((_, port))) = answer {
            return Some(port);
        }
    }
    None
}

/// SIGKILLs the node on `port`.
async fn kill_node(conn: &Conn, port: u16) {
    let mut r = direct(conn, port).await.unwrap();
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query_async(&mut r)
        .await
        .unwrap();
    super::kill_described(&info);
}

/// Waits until the sentinels name a leader other than `old`.
async fn promoted(conn: &Conn, old: u16) -> u16 {
    eventually("a new leader", Duration::from_secs(60), || async move {
        leader_port(conn).await.filter(|p| *p != old)
    })
    .await
}

/// Seconds from `since` until `tally` acknowledges another write, after
/// it saw more than `failed` refusals (the kill noticed, so a write that
/// was in flight when it struck does not count).
async fn writable_again(tally: &Tally, since: Instant, failed: u64) -> f64 {
    eventually("the kill noticed", Duration::from_secs(60), || async move {
        (tally.failed.load(Ordering::Relaxed) > failed).then_some(())
    })
    .await;
    let before = tally.acked.load(Ordering::Relaxed);
    eventually(
        "writes through the uri",
        Duration::from_secs(120),
        || async move { (tally.acked.load(Ordering::Relaxed) > before).then_some(()) },
    )
    .await;
    since.elapsed().as_secs_f64()
}

/// Redis fails over by itself, whatever the platform database: one
/// backend is enough (the loop is slow). The API process is dead through
/// the whole loop: the sentinels fail over, the endpoint follows and the
/// agent brings the killed nodes back without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_write_confirmed_with_wait_is_lost_across_failovers() {
    let mut s = start(Backend::Sqlite).await;
    let _processes = Processes::of(&s);
    let token = create_org(&s, "failovers", "pro").await;
    let c = s.client().with_token(&token);
    let cache = create(&c, json!({ "name": "loop", "replicas": 2 })).await;
    let id = cache["id"].as_str().unwrap().to_owned();
    let conn = Arc::new(connection(&c, &id).await);
    let ready = || async {
        let port = leader_port(&conn).await?;
        let mut r = direct(&conn, port).await.ok()?;
        let info: String = redis::cmd("INFO")
            .arg("replication")
            .query_async(&mut r)
            .await
            .ok()?;
        info.contains("connected_slaves:2").then_some(port)
    };
    eventually("two replicas in sync", Duration::from_secs(60), ready).await;

    let stop = Arc::new(AtomicBool::new(false));
    let tallies: [Arc<Tally>; 3] = Default::default();
    let [all, _, without] = tallies.clone();
    let keys = [
        ("wait-all", Some(2)),
        ("wait-one", Some(1)),
        ("no-wait", None),
    ];
    let writers = keys.iter().zip(&tallies).map(|((key, wait), tally)| {
        tokio::spawn(writer(
            conn.clone(),
            key,
            *wait,
            tally.clone(),
            stop.clone(),
        ))
    });
    let writers: Vec<_> = writers.collect();
    for tally in &tallies {
        eventually("a first write", Duration::from_secs(60), || async move {
            (tally.acked.load(Ordering::Relaxed) > 0).then_some(())
        })
        .await;
    }

    std::process::Command::new("kill")
        .args(["-KILL", &s.pid().expect("serve runs").to_string()])
        .status()
        .unwrap();
    s.exited().await;

    // Three failovers, the second a double: its new leader is killed
    // 300 ms after the sentinels name it.
    let mut outages = Vec::new();
    for round in 0..3 {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let leader = eventually("a leader", Duration::from_secs(60), || leader_port(&conn)).await;
        let failed = without.failed.load(Ordering::Relaxed);
        let killed = Instant::now();
        kill_node(&conn, leader).await;
        if round == 1 {
            let next = promoted(&conn, leader).await;
            tokio::time::sleep(Duration::from_millis(300)).await;
            eprintln!(
                "double failover: second leader killed {:.1} s after the first",
                killed.elapsed().as_secs_f64()
            );
            kill_node(&conn, next).await;
        }
        outages.push(writable_again(&without, killed, failed).await);
        // The cluster whole again (the dead nodes back as replicas) before
        // the next round.
        let explain = || {
            print_logs(
                &s.data_dir.path().join("caches"),
                &s.data_dir.path().join("agent"),
            )
        };
        eventually_or(
            "two replicas back",
            Duration::from_secs(120),
            ready,
            explain,
        )
        .await;
    }
    let confirmed = all.acked.load(Ordering::Relaxed);
    eventually(
        "a write confirmed by both replicas",
        Duration::from_secs(60),
        || async { (all.acked.load(Ordering::Relaxed) > confirmed).then_some(()) },
    )
    .await;
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }
    // The API comes back and finds the cache as the agent kept it.
    s.restart().await;
    let c = s.client().with_token(&token);
    c.wait_running(&format!("/caches/{id}")).await;

    let mut r = direct(&conn, conn.port).await.unwrap();
    let mut read = async |key: &str| -> u64 {
        let v: Option<u64> = redis::cmd("GET")
            .arg(key)
            .query_async(&mut r)
            .await
            .unwrap();
        v.unwrap_or(0)
    };
    let mut figures = Vec::new();
    for ((key, _), tally) in keys.iter().zip(&tallies) {
        let acked = tally.acked.load(Ordering::Relaxed);
        let kept = read(key).await;
        figures.push(format!(
            "{key}: {acked} acknowledged, {} lost, {} refused or cut",
            acked.saturating_sub(kept),
            tally.failed.load(Ordering::Relaxed)
        ));
    }
    let final_all = read("wait-all").await;
    let acked_all = all.acked.load(Ordering::Relaxed);
    eprintln!(
        "cache kill loop, API process down: {} failovers (one double); {}; seconds without a writable leader \
         per failover: {}",
        outages.len() + 1,
        figures.join("; "),
        outages
            .iter()
            .map(|s| format!("{s:.1}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if final_all < acked_all {
        // What the sentinels and nodes did, to tell why.
        let logs = c.get(&format!("/caches/{id}/logs?lines=300")).await.json();
        for line in logs["items"].as_array().into_iter().flatten() {
            eprintln!("{} {}", line["process"], line["line"]);
        }
    }
    assert!(
        final_all >= acked_all,
        "the counter both replicas confirmed went back: {final_all} < {acked_all}"
    );
}

/// The last lines of the agent's log and of every cache process's log
/// under `caches`, to tell why a cluster did not heal.
fn print_logs(caches: &std::path::Path, agent: &std::path::Path) {
    let tail = |path: &std::path::Path, lines: usize| {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        eprintln!("== {}", path.display());
        for line in &all[all.len().saturating_sub(lines)..] {
            eprintln!("{line}");
        }
    };
    tail(&agent.join("agent.log"), 80);
    for cluster in std::fs::read_dir(caches).into_iter().flatten().flatten() {
        for process in std::fs::read_dir(cluster.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            tail(&process.path().join("redis.log"), 40);
        }
    }
}
