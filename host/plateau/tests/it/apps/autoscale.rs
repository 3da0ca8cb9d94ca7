//! Autoscale (`/apps/{id}/autoscale`) on one server with short windows
//! (`PLATEAU_APPS_AUTOSCALE_*`): CPU load at the `burn` app's endpoint
//! adds replicas and its end removes them; an app with `min` 0 goes to
//! zero replicas when idle and its first request after that is answered;
//! `GET /metrics` shows the app's CPU, requests and bandwidth. Prints the
//! reaction times (no timed assertions).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use plateau_plugin_artifacts::apps::BURN_APP;
use plateau_testkit::{Backend, Client, ServerOptions};
use serde_json::{Value, json};

use super::{Apps, Edge, id, push, slug};
use crate::eventually;

const WITHIN: Duration = Duration::from_secs(90);

/// The app's replicas as `GET /apps/{id}/autoscale` reports them.
async fn replicas(c: &Client, app: &str) -> i64 {
    let r = c.get(&format!("/apps/{app}/autoscale")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["replicas"].as_i64().unwrap()
}

/// Workers sending `GET /burn?ms=150` through the edge until stopped.
struct Burn {
    stop: Arc<AtomicBool>,
    failed: Arc<AtomicU64>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Burn {
    fn start(env: &Apps, slug: &str, workers: usize) -> Burn {
        let stop = Arc::new(AtomicBool::new(false));
        let failed = Arc::new(AtomicU64::new(0));
        let tasks = (0..workers)
            .map(|_| {
                let edge = Edge::new(&env.server, slug);
                let (stop, failed) = (stop.clone(), failed.clone());
                tokio::spawn(async move {
                    while !stop.load(Ordering::Relaxed) {
                        if !matches!(edge.get("/burn?ms=150").await, Ok((200, _))) {
                            failed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        Burn {
            stop,
            failed,
            tasks,
        }
    }

    async fn finish(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        for task in self.tasks {
            task.await.unwrap();
        }
        self.failed.load(Ordering::Relaxed)
    }
}

async fn put(c: &Client, app: &str, body: Value) -> plateau_testkit::Response {
    c.put(&format!("/apps/{app}/autoscale"), body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn autoscale_follows_cpu_sleeps_wakes_and_meters() {
    let options = ServerOptions::new(Backend::Sqlite)
        .env("PLATEAU_APPS_AUTOSCALE_WINDOW_MS", "2000")
        .env("PLATEAU_APPS_AUTOSCALE_COOLDOWN_MS", "4000")
        .env("PLATEAU_APPS_AUTOSCALE_IDLE_MS", "3000")
        .env("PLATEAU_USAGE_SAMPLE_MS", "500");
    let env = Apps::start_with(options).await;
    let c = env.client();
    let host = env.server.url.trim_start_matches("http://").to_owned();
    let burn_ref = format!("{host}/{}/burn:v1", env.org);
    push(&env.token, BURN_APP, &burn_ref).await;
    let app = env.deployed("burn", &burn_ref).await;
    let (app_id, app_slug) = (id(&app), slug(&app));
    // A whole core per request, so a burn never meets its CPU budget.
    let r = c
        .put(
            &format!("/apps/{app_id}/resources"),
            json!({ "milliCpu": 1000 }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());

    // Bad settings name their field; a max past the plan is a 409.
    for (body, field) in [
        (json!({ "enabled": true, "min": 3, "max": 2 }), "max"),
        (json!({ "enabled": true, "min": -1, "max": 2 }), "min"),
        (
            json!({ "enabled": true, "cpuTargetPct": 0 }),
            "cpuTargetPct",
        ),
    ] {
        let r = put(&c, &app_id, body.clone()).await;
        assert_eq!(r.status, 400, "{body}: {}", r.text());
        assert_eq!(r.json()["errors"][0]["field"], field, "{}", r.text());
    }
    let r = put(&c, &app_id, json!({ "enabled": true, "max": 1000 })).await;
    assert_eq!(r.status, 409, "{}", r.text());
    let r = c.get(&format!("/apps/{app_id}/autoscale")).await;
    assert_eq!(r.json()["enabled"], false, "{}", r.text());

    // Load: more replicas, then back to min once it stops.
    let r = put(
        &c,
        &app_id,
        json!({ "enabled": true, "min": 1, "max": 3, "cpuTargetPct": 50 }),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["replicas"], 1, "{}", r.text());
    let load = Burn::start(&env, &app_slug, 4);
    let started = Instant::now();
    eventually("a second replica under load", WITHIN, || async {
        (replicas(&c, &app_id).await >= 2).then_some(())
    })
    .await;
    let reaction = started.elapsed();
    let peak = eventually("the load to settle", WITHIN, || async {
        tokio::time::sleep(Duration::from_secs(3)).await;
        Some(replicas(&c, &app_id).await)
    })
    .await;
    let failed = load.finish().await;
    let stopped = Instant::now();
    eventually("back to one replica", WITHIN, || async {
        (replicas(&c, &app_id).await == 1).then_some(())
    })
    .await;
    eprintln!(
        "autoscale: load to a new replica serving {:.2} s, {peak} replicas under load, \
         {failed} requests failed, load end to min {:.2} s",
        reaction.as_secs_f64(),
        stopped.elapsed().as_secs_f64()
    );
    let events = c.get("/events?type=app.scaled&limit=100").await.json();
    let reasons: Vec<&str> = events["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["resourceId"] == app_id.as_str())
        .filter_map(|e| e["data"]["reason"].as_str())
        .collect();
    assert!(
        reasons.contains(&"cpu_above_target") && reasons.contains(&"cpu_below_target"),
        "{events}"
    );

    // Min 0: idle, it sleeps; the first request wakes it and is answered.
    let r = put(&c, &app_id, json!({ "enabled": true, "min": 0, "max": 3 })).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let idle = Instant::now();
    eventually("zero replicas when idle", WITHIN, || async {
        (replicas(&c, &app_id).await == 0).then_some(())
    })
    .await;
    // The agent runs nothing for it any more.
    let verify = format!(
        "/apps/{app_id}/env/verify?key=PORT&expected={}",
        "0".repeat(64)
    );
    eventually("the replicas to stop", WITHIN, || async {
        let r = c.get(&verify).await;
        (r.status == 409 && r.json()["code"] == "app_not_running").then_some(())
    })
    .await;
    eprintln!(
        "autoscale: idle to zero replicas {:.2} s",
        idle.elapsed().as_secs_f64()
    );
    let edge = Edge::new(&env.server, &app_slug);
    let woke = Instant::now();
    let first = edge.get("/").await;
    eprintln!(
        "autoscale: the first request to the sleeping app answered in {:.2} s: {first:?}",
        woke.elapsed().as_secs_f64()
    );
    assert_eq!(first, Ok((200, "burn".to_owned())));
    assert_eq!(replicas(&c, &app_id).await, 1);

    // The app's usage is in the series store.
    let mut seen = Vec::new();
    for metric in [
        "app_cpu_seconds",
        "app_requests",
        "app_bandwidth_in_gb",
        "app_bandwidth_out_gb",
    ] {
        let quantity = eventually(metric, WITHIN, || async {
            let m = c
                .get(&format!("/metrics?resource={app_id}&metric={metric}"))
                .await
                .json();
            let point = m["items"].as_array()?.first()?.clone();
            assert_eq!(point["resourceType"], "app", "{m}");
            (point["quantity"].as_f64()? > 0.0).then_some(point)
        })
        .await;
        seen.push(format!("{metric} {}", quantity["quantity"]));
    }
    eprintln!("autoscale: metrics after the load: {}", seen.join(", "));
}

/// A busybox image whose httpd runs `/cgi-bin/burn`, a shell loop that
/// keeps its CPU quota busy for a while.
fn burn_config() -> Vec<u8> {
    let cgi = "#!/bin/sh\\necho Content-Type: text/plain\\necho\\ni=0\\n\
               while [ $i -lt 20000 ]; do i=$((i+1)); done\\necho burned\\n";
    let script = format!(
        "mkdir -p /tmp/www/cgi-bin && echo burn > /tmp/www/index.html \
         && printf '{cgi}' > /tmp/www/cgi-bin/burn && chmod +x /tmp/www/cgi-bin/burn \
         && exec httpd -f -p $PORT -h /tmp/www"
    );
    serde_json::to_vec(&json!({
        "architecture": "amd64",
        "os": "linux",
        "config": { "Cmd": ["/bin/sh", "-c", script] },
        "rootfs": { "type": "layers", "diff_ids": [] },
    }))
    .unwrap()
}

/// Linux replicas are scaled on their cgroups' CPU: up under load, down
/// after it. Needs root and runc.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn linux_replicas_scale_on_their_cgroups_cpu() {
    let options = ServerOptions::new(Backend::Sqlite)
        .env("PLATEAU_APPS_AUTOSCALE_WINDOW_MS", "2000")
        .env("PLATEAU_APPS_AUTOSCALE_COOLDOWN_MS", "4000")
        .env("PLATEAU_USAGE_SAMPLE_MS", "500");
    let env = Apps::start_with(options).await;
    let c = env.client();
    let pusher = plateau_testkit::oci::ImagePusher::new(&env.server.url, &env.token);
    let layer = plateau_testkit::oci::busybox_layer();
    let repo = format!("{}/burner", env.org);
    let image = pusher
        .push_image(&repo, "v1", &burn_config(), &layer, false)
        .await;
    let app = env.deployed("burner", &image).await;
    let (app_id, app_slug) = (id(&app), slug(&app));
    let r = c
        .put(
            &format!("/apps/{app_id}/resources"),
            json!({ "milliCpu": 100 }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let edge = Edge::new(&env.server, &app_slug);
    eventually("the burn script", WITHIN, || async {
        matches!(edge.get("/cgi-bin/burn").await, Ok((200, b)) if b.contains("burned"))
            .then_some(())
    })
    .await;
    let r = put(
        &c,
        &app_id,
        json!({ "enabled": true, "min": 1, "max": 2, "cpuTargetPct": 50 }),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..3)
        .map(|_| {
            let (edge, stop) = (Edge::new(&env.server, &app_slug), stop.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let _ = edge.get("/cgi-bin/burn").await;
                }
            })
        })
        .collect();
    let started = Instant::now();
    eventually("a second container under load", WITHIN, || async {
        (replicas(&c, &app_id).await == 2).then_some(())
    })
    .await;
    eprintln!(
        "autoscale (linux): load to a second replica {:.2} s",
        started.elapsed().as_secs_f64()
    );
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.await.unwrap();
    }
    let stopped = Instant::now();
    eventually("back to one container", WITHIN, || async {
        (replicas(&c, &app_id).await == 1).then_some(())
    })
    .await;
    eprintln!(
        "autoscale (linux): load end to one replica {:.2} s",
        stopped.elapsed().as_secs_f64()
    );
    let m = c
        .get(&format!(
            "/metrics?resource={app_id}&metric=app_cpu_seconds"
        ))
        .await;
    eprintln!("autoscale (linux): {}", m.text());
}
