//! An app with a volume moves between two hosts on one PostgreSQL (issue
//! 31), and crashes leave nothing half-applied. A migration under load
//! fails no request and the target serves the data the app wrote; the
//! source's image is removed after the switch. A second migration is
//! crashed twice (the source's agent SIGKILLed while it snapshots the
//! volume, the target's while it restores it): the app ends on one host,
//! serving, with its data and one volume, and no copy left on the other.
//! Then a backup's restore is crashed the same way: the restored volume
//! ends whole, never half-written. Figures are printed: requests sent and
//! failed, the time to switch and to recover. Needs root, runc, free loop
//! devices and e2fsprogs.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use plateau_testkit::{Backend, Client, Server, ServerOptions};
use serde_json::json;

use crate::apps::volumes::{push, running_volume, until_printed, wait_running};
use crate::apps::{Apps, Edge, Load, failures, id, slug};
use crate::eventually;
use crate::runners::{LEASE_MS, admin_of, is_host, serving};

/// What `GET /` of the busybox image answers.
const INDEX: &str = "ok\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_moves_with_its_volume_and_crashes_leave_nothing_half_done() {
    // One volume backup store for both hosts, as `s3://` would be.
    let store = tempfile::tempdir().unwrap();
    let store_dir = store.path().to_string_lossy().into_owned();
    let options = ServerOptions::new(Backend::Postgres)
        .env("PLATEAU_RUNNER_LEASE_MS", LEASE_MS)
        .env("PLATEAU_APPS_VOLUME_BACKUP_STORE", &store_dir);
    let env = Apps::start_with(options).await;
    let joining = ServerOptions::joining(&env.server)
        .env("PLATEAU_BOOTSTRAP_TOKEN", &env.server.token)
        .env("PLATEAU_RUNNER_LEASE_MS", LEASE_MS)
        .env("PLATEAU_APPS_VOLUME_BACKUP_STORE", &store_dir);
    // The hosts share no images directory: a runner fetches the Linux
    // image it lacks from the registry.
    let b = crate::start_with(joining).await;
    let c = env.client();
    let admin = admin_of(&env.server).await;

    let image = push(&env, "volmover", "v1", &[]).await;
    let app = env.deployed("volmover", &image).await;
    let (app_id, app_slug) = (id(&app), slug(&app));
    let servers = [&env.server, &b];
    let edges = [Edge::new(&env.server, &app_slug), Edge::new(&b, &app_slug)];
    let vol = running_volume(
        &env,
        &app_id,
        json!({ "name": "data", "sizeGb": 1, "mountPath": "/data" }),
    )
    .await;
    let vol_id = id(&vol);
    // 64 MiB of random data, so a snapshot and a restore take a moment.
    let write = "echo kept > /data/greeting && head -c 67108864 /dev/urandom > /data/big \
                 && sync && md5sum /data/big";
    let sum = until_printed(&edges[0], write, |s| s.ends_with("/data/big")).await;
    let check = "cat /data/greeting && md5sum /data/big";
    let expected = format!("kept\n{sum}");

    // A clean migration under load on both edges.
    let (from, _) = serving(&admin, &app_id).await.expect("the app is placed");
    let to = other_runner(&admin, &from).await;
    let loads = [
        Load::start(&env.server, &app_slug, 2),
        Load::start(&b, &app_slug, 2),
    ];
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = Instant::now();
    let migrate = format!("/apps/{app_id}/migrate");
    let r = c.post(&migrate, json!({ "targetServerId": to })).await;
    assert_eq!(r.status, 202, "{}", r.text());
    let r = c
        .post(
            &format!("/apps/{app_id}/volumes"),
            json!({ "name": "late", "sizeGb": 1, "mountPath": "/late" }),
        )
        .await;
    assert_eq!(
        r.status,
        409,
        "no volume is made while the app moves: {}",
        r.text()
    );
    let switched = until_switched(&admin, &app_id, &to).await;
    let switched = switched - started;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut answers = Vec::new();
    for load in loads {
        answers.extend(load.finish().await);
    }
    let failed = failures(&answers, &[INDEX]);
    eprintln!(
        "migration with a 1 GB volume (64 MiB written) under load: {} requests sent, {} failed, switched {:.2} s after the request; first failures {:?}",
        answers.len(),
        failed.len(),
        switched.as_secs_f64(),
        failed.iter().take(3).collect::<Vec<_>>()
    );
    assert!(failed.is_empty(), "{failed:?}");
    for edge in &edges {
        assert_eq!(
            until_printed(edge, check, |s| s == expected).await,
            expected
        );
    }
    let source = host_of(servers, &from);
    until_gone(&volume_dir(source, &vol_id)).await;
    one_volume(&c, &app_id, &vol_id).await;
    let events = c.get("/events?type=app.migrated&limit=1").await.json();
    assert_eq!(events["items"][0]["data"]["volumesMoved"], 1, "{events}");

    // Back again, with the source's agent killed while it snapshots the
    // volume and the target's while it restores it.
    let (from, to) = (to, from);
    let (source, target) = (host_of(servers, &from), host_of(servers, &to));
    let started = Instant::now();
    let r = c.post(&migrate, json!({ "targetServerId": to })).await;
    assert_eq!(r.status, 202, "{}", r.text());
    let scratch = source.data_dir.path().join("apps/volumes/.backups");
    let prefix = format!("{vol_id}.");
    let at = kill_agent_at(source, |_| {
        std::fs::read_dir(&scratch).is_ok_and(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        })
    })
    .await;
    eprintln!(
        "migrate kill: the source's agent SIGKILLed {:.2} s after the request, while it snapshotted the volume",
        at.as_secs_f64()
    );
    let partial = volume_dir(target, &vol_id).join("image.partial");
    let at = kill_agent_at(target, |_| partial.exists()).await;
    eprintln!(
        "migrate kill: the target's agent SIGKILLed {:.2} s after the request, while it restored the volume",
        at.as_secs_f64()
    );
    let switched = until_switched(&admin, &app_id, &to).await - started;
    for edge in &edges {
        assert_eq!(
            until_printed(edge, check, |s| s == expected).await,
            expected
        );
    }
    eprintln!(
        "migrate kill: the app serves its data from the target {:.2} s after the request, after both kills",
        switched.as_secs_f64()
    );
    until_gone(&volume_dir(source, &vol_id)).await;
    eventually(
        "the killed snapshot's copy to go",
        Duration::from_secs(60),
        || async {
            let left = std::fs::read_dir(&scratch).is_ok_and(|d| {
                d.flatten()
                    .any(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            });
            (!left).then_some(())
        },
    )
    .await;
    one_volume(&c, &app_id, &vol_id).await;
    assert!(!partial.exists(), "{}", partial.display());

    // A restore killed half-way: the new volume ends whole.
    let host = Client::new(&target.url).with_token(&env.token);
    let r = host
        .post(
            &format!("/apps/{app_id}/volumes/{vol_id}/backups"),
            json!({}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let backup_id = id(&r.json());
    let started = Instant::now();
    let r = c
        .post(
            &format!("/apps/{app_id}/volumes/{vol_id}/backups/{backup_id}/restore"),
            json!({ "name": "restored", "mountPath": "/restored" }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let restored = id(&r.json());
    let partial = volume_dir(target, &restored).join("image.partial");
    let at = kill_agent_at(target, |_| partial.exists()).await;
    wait_running(&env, &app_id, &restored).await;
    let restored_sum = until_printed(&edges[1], "md5sum /restored/big", |s| {
        s.ends_with("/restored/big")
    })
    .await;
    eprintln!(
        "restore kill: the agent SIGKILLed {:.2} s into the restore; the restored volume serves whole {:.2} s after the request",
        at.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(restored_sum.split(' ').next(), sum.split(' ').next());
    assert!(!partial.exists(), "{}", partial.display());
    let list = c.get(&format!("/apps/{app_id}/volumes")).await.json();
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{list}");

    // Between the edges: a WebSocket upgrade passes through, and the app
    // sees the client's address (a client at 127.0.0.2), never one a
    // client names, whichever edge it reached.
    let relay = crate::apps::cdn::edge_app_image(&env).await;
    let relay = env.deployed("relay", &relay).await;
    let (runs_on, _) = serving(&admin, &id(&relay)).await.expect("placed");
    let (home, away) = if is_host(&env.server, &runs_on) {
        (&env.server, &b)
    } else {
        (&b, &env.server)
    };
    let name = format!("{}.apps.localhost", slug(&relay));
    let spoof = [
        ("x-forwarded-for", "10.1.2.3"),
        ("forwarded", "for=10.1.2.3"),
        ("x-plateau-client-addr", "10.1.2.3"),
        ("x-plateau-edge-token", "guessed"),
    ];
    let want = (
        "127.0.0.2".to_owned(),
        "for=127.0.0.2;proto=http".to_owned(),
    );
    for s in [away, home] {
        let seen = eventually("the relay to answer", Duration::from_secs(60), || async {
            seen_client(s, &name, &spoof).await
        })
        .await;
        assert_eq!(seen, want, "through {}", s.edge_url);
    }
    let echoed = crate::apps::cdn::websocket(edge_port(away), &name, "").await;
    assert_eq!(echoed[0], "HTTP/1.1 101 Switching Protocols", "{echoed:?}");
    assert_eq!(
        &echoed[2..],
        ["hello", "a second, longer message through the edge"]
    );
    eprintln!(
        "between the edges: a WebSocket echoed through the forwarding edge; the app saw the client as {want:?}"
    );
}

fn edge_port(s: &Server) -> u16 {
    s.edge_url.rsplit(':').next().unwrap().parse().unwrap()
}

/// What the relay app saw of its client (`X-Forwarded-For`, `Forwarded`)
/// for a request from 127.0.0.2 to `s`'s edge with `headers`.
async fn seen_client(s: &Server, name: &str, headers: &[(&str, &str)]) -> Option<(String, String)> {
    let client = reqwest::Client::builder()
        .local_address(Some("127.0.0.2".parse().unwrap()))
        .build()
        .unwrap();
    let mut req = client.get(format!("{}/", s.edge_url)).header("host", name);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.ok()?;
    let header = |k: &str| r.headers().get(k).map(|v| v.to_str().unwrap().to_owned());
    (r.status() == 200).then(|| {
        (
            header("x-seen-for").unwrap_or_default(),
            header("x-seen-forwarded").unwrap_or_default(),
        )
    })
}

/// The runner other than `id`.
async fn other_runner(admin: &Client, id: &str) -> String {
    let listed = crate::runners::runners(admin).await;
    listed
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .find(|r| r != id)
        .expect("two runners")
}

/// Waits until app `app` is served by `to` with no migration under way;
/// when.
async fn until_switched(admin: &Client, app: &str, to: &str) -> Instant {
    eventually("the app to switch", Duration::from_secs(180), || async {
        let (now, p) = serving(admin, app).await?;
        (now == to && p["targetServerId"].is_null()).then(Instant::now)
    })
    .await
}

fn host_of<'a>(servers: [&'a Server; 2], runner: &str) -> &'a Server {
    servers
        .into_iter()
        .find(|s| is_host(s, runner))
        .expect("a runner is one of the hosts")
}

fn volume_dir(s: &Server, vol: &str) -> PathBuf {
    s.data_dir.path().join("apps/volumes").join(vol)
}

async fn until_gone(path: &Path) {
    eventually("a leftover to go", Duration::from_secs(60), || async {
        (!path.exists()).then_some(())
    })
    .await;
}

/// The app has one volume, `vol_id`, and it comes to run (the target
/// may still be mounting it when the app already serves).
async fn one_volume(c: &Client, app: &str, vol_id: &str) {
    eventually(
        "the one volume running",
        Duration::from_secs(60),
        || async {
            let list = c.get(&format!("/apps/{app}/volumes")).await.json();
            let items = list["items"].as_array().unwrap();
            assert_eq!(items.len(), 1, "{list}");
            assert_eq!(items[0]["id"], vol_id, "{list}");
            (items[0]["status"] == "running").then_some(())
        },
    )
    .await;
}

/// SIGKILLs the agent of `s` as soon as `began` says its step began
/// (polled every 2 ms); how long after the call. Serve starts it again.
async fn kill_agent_at(s: &Server, began: impl Fn(&Path) -> bool) -> Duration {
    let started = Instant::now();
    let dir = s.data_dir.path().to_owned();
    while !began(&dir) {
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "the step never began"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let pid = std::fs::read_to_string(dir.join("agent/pid")).unwrap();
    let status = tokio::process::Command::new("kill")
        .args(["-KILL", pid.trim()])
        .status()
        .await
        .unwrap();
    assert!(status.success(), "kill {pid}");
    started.elapsed()
}
