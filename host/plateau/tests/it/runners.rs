//! Several hosts on one PostgreSQL run apps as one (issue 31): each
//! agent is a runner with a heartbeat (`GET /admin/runners`), an app runs
//! on the runner its placement picks and every host's edge serves it, a
//! migration under load fails no request, and when the runner of an app
//! is killed (serve and agent, SIGKILL) the app serves again from the
//! other host. Figures are printed: requests sent and failed during the
//! migration, the time to switch, the seconds until the app serves again
//! after the kill.

use std::time::{Duration, Instant};

use plateau_testkit::{Backend, Client, Server, ServerOptions};
use serde_json::{Value, json};

use crate::apps::{Apps, Edge, Load, failures, id, slug};

const BODY: &str = "hello from v1";
/// A short lease, so a killed runner is noticed within seconds.
pub(crate) const LEASE_MS: &str = "3000";

/// The runners as the operator sees them.
pub(crate) async fn runners(admin: &Client) -> Vec<Value> {
    let r = admin.get("/admin/runners").await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["items"].as_array().unwrap().clone()
}

/// The runner serving app `app` (not a migration's target), if any.
pub(crate) async fn serving(admin: &Client, app: &str) -> Option<(String, Value)> {
    runners(admin).await.into_iter().find_map(|r| {
        let placement = r["apps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["appId"] == app && p["serverId"] == r["id"])?
            .clone();
        Some((r["id"].as_str().unwrap().to_owned(), placement))
    })
}

pub(crate) async fn admin_of(s: &Server) -> Client {
    s.anonymous().with_cookie(&crate::admin::login(s).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apps_move_between_runners_without_failed_requests() {
    let options = ServerOptions::new(Backend::Postgres).env("PLATEAU_RUNNER_LEASE_MS", LEASE_MS);
    let env = Apps::start_with(options).await;
    let joining = ServerOptions::joining(&env.server)
        .env("PLATEAU_BOOTSTRAP_TOKEN", &env.server.token)
        .env("PLATEAU_RUNNER_LEASE_MS", LEASE_MS);
    let b = crate::start_with(joining).await;
    let c = env.client();
    let admin = admin_of(&env.server).await;

    // Both agents are runners, live, with their edges' addresses.
    let listed = runners(&admin).await;
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(listed.iter().all(|r| r["live"] == true), "{listed:?}");
    let ids: Vec<String> = listed
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();

    // The app runs on one runner and both edges serve it.
    let app = env.deployed("mover", &env.v1).await;
    let (app_id, app_slug) = (id(&app), slug(&app));
    let edges = [Edge::new(&env.server, &app_slug), Edge::new(&b, &app_slug)];
    for edge in &edges {
        edge.until_body(BODY).await;
    }
    let (from, _) = serving(&admin, &app_id).await.expect("the app is placed");
    let to = ids.iter().find(|i| **i != from).unwrap().clone();

    // Bad targets name the field.
    let migrate = format!("/apps/{app_id}/migrate");
    for target in ["hst_nosuchrunner", from.as_str()] {
        let r = c.post(&migrate, json!({ "targetServerId": target })).await;
        assert_eq!(r.status, 400, "{}", r.text());
        assert!(r.text().contains("targetServerId"), "{}", r.text());
    }

    // A migration under load on both edges fails no request.
    let loads = [
        Load::start(&env.server, &app_slug, 2),
        Load::start(&b, &app_slug, 2),
    ];
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = Instant::now();
    let r = c.post(&migrate, json!({ "targetServerId": to })).await;
    assert_eq!(r.status, 202, "{}", r.text());
    assert_eq!(r.json()["targetServerId"], to.as_str());
    let again = c.post(&migrate, json!({})).await;
    assert_eq!(again.status, 409, "{}", again.text());
    let switched = loop {
        if let Some((now, p)) = serving(&admin, &app_id).await
            && now == to
            && p["targetServerId"].is_null()
        {
            break started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the app never switched"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // The old runner drains and its edge forwards: keep the load on.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut answers = Vec::new();
    for load in loads {
        answers.extend(load.finish().await);
    }
    let failed = failures(&answers, &[BODY]);
    eprintln!(
        "migration under load: {} requests sent, {} failed, switched {:.2} s after the request; first failures {:?}",
        answers.len(),
        failed.len(),
        switched.as_secs_f64(),
        failed.iter().take(3).collect::<Vec<_>>()
    );
    assert!(failed.is_empty(), "{failed:?}");
    for kind in ["app.migration_started", "app.migrated"] {
        let events = c.get(&format!("/events?type={kind}&limit=10")).await.json();
        let item = &events["items"][0];
        assert_eq!(item["data"]["to"], to.as_str(), "{events}");
        assert_eq!(item["data"]["from"], from.as_str(), "{events}");
    }

    // A Linux app on hosts that share no images directory.
    linux_app_fetched_by_its_runner(&env, &b, &admin, &ids).await;

    // The runner of the app is killed, serve and agent: the app is placed
    // on the other runner and serves again from its edge.
    let (mut dead, survivor) = if is_host(&env.server, &to) {
        (env.server, b)
    } else {
        (b, env.server)
    };
    kill(&mut dead).await;
    let killed = Instant::now();
    let edge = Edge::new(&survivor, &app_slug);
    let mut failed = 0;
    loop {
        match edge.get("/").await {
            Ok((200, body)) if body == BODY => break,
            _ => failed += 1,
        }
        assert!(
            killed.elapsed() < Duration::from_secs(120),
            "the app never came back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!(
        "runner killed: the app serves again from the other host after {:.2} s ({failed} requests failed meanwhile, lease {LEASE_MS} ms)",
        killed.elapsed().as_secs_f64()
    );
    let c = Client::new(&survivor.url).with_token(&env.token);
    let events = c.get("/events?type=app.rescheduled&limit=10").await.json();
    let item = &events["items"][0];
    assert_eq!(item["data"]["cause"], "runner_gone", "{events}");
    assert_eq!(item["data"]["from"], to.as_str(), "{events}");
}

/// A Linux image is unpacked by the API process that resolves it, on its
/// own host; the hosts share no images directory, so a runner that lacks
/// it fetches it from the registry, checking its digests. A layer whose
/// bytes no longer match its digest fails the migration with the reason,
/// the app serving on where it was; once whole again, the migration
/// fetches it and switches.
async fn linux_app_fetched_by_its_runner(env: &Apps, b: &Server, admin: &Client, ids: &[String]) {
    let c = env.client();
    let image = crate::apps::volumes::push(env, "fetched", "v1", &[]).await;
    let app = env.deployed("fetched", &image).await;
    let (app_id, app_slug) = (id(&app), slug(&app));
    let edges = [Edge::new(&env.server, &app_slug), Edge::new(b, &app_slug)];
    for edge in &edges {
        edge.until_body("ok\n").await;
    }
    let (runs_on, _) = serving(admin, &app_id).await.expect("the app is placed");
    let to = ids.iter().find(|i| **i != runs_on).unwrap().clone();
    let target = if is_host(&env.server, &to) {
        &env.server
    } else {
        b
    };
    // The target has nothing of it unpacked, as a host that never saw it.
    let unpacked = target.data_dir.path().join("apps/images").join(&env.org);
    let _ = std::fs::remove_dir_all(&unpacked);

    // A layer damaged in the registry's store: the fetch refuses it.
    let manifest: Value = reqwest::Client::new()
        .get(format!(
            "{}/v2/{}/fetched/manifests/v1",
            env.server.url, env.org
        ))
        .basic_auth("plateau", Some(&env.token))
        .header("accept", "application/vnd.oci.image.manifest.v1+json")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let layer = manifest["layers"][0]["digest"].as_str().unwrap();
    let blob = find_file(
        &env.server.data_dir.path().join("registry"),
        layer.trim_start_matches("sha256:"),
    )
    .expect("the layer is in the registry's store");
    let whole = std::fs::read(&blob).unwrap();
    let mut damaged = whole.clone();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0xff;
    std::fs::write(&blob, &damaged).unwrap();
    let migrate = format!("/apps/{app_id}/migrate");
    let r = c.post(&migrate, json!({ "targetServerId": to })).await;
    assert_eq!(r.status, 202, "{}", r.text());
    let failed = crate::eventually(
        "the migration to fail",
        Duration::from_secs(120),
        || async {
            let events = c
                .get("/events?type=app.migration_failed&limit=1")
                .await
                .json();
            let item = events["items"][0].clone();
            (item["resourceId"] == app_id.as_str()).then_some(item)
        },
    )
    .await;
    let reason = failed["data"]["reason"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    eprintln!("image fetch of a damaged layer: the migration failed: {reason}");
    assert!(reason.contains("cannot fetch"), "{failed}");
    assert_eq!(failed["data"]["cause"], "start_failed", "{failed}");
    let config = manifest["config"]["digest"].as_str().unwrap();
    let rootfs = unpacked
        .join(config.trim_start_matches("sha256:"))
        .join("rootfs");
    assert!(!rootfs.exists(), "nothing unchecked is kept");
    let (still, _) = serving(admin, &app_id).await.expect("placed");
    assert_eq!(still, runs_on);
    for edge in &edges {
        assert_eq!(edge.get("/").await, Ok((200, "ok\n".to_owned())));
    }

    // Whole again: the target fetches it, checks it, and the app moves.
    std::fs::write(&blob, &whole).unwrap();
    let started = Instant::now();
    let r = c.post(&migrate, json!({ "targetServerId": to })).await;
    assert_eq!(r.status, 202, "{}", r.text());
    crate::eventually("the app to switch", Duration::from_secs(120), || async {
        let (now, p) = serving(admin, &app_id).await?;
        (now == to && p["targetServerId"].is_null()).then_some(())
    })
    .await;
    eprintln!(
        "image fetch: the target fetched the Linux image and serves the app {:.2} s after the migration was asked",
        started.elapsed().as_secs_f64()
    );
    assert!(rootfs.is_dir(), "{}", rootfs.display());
    for edge in &edges {
        edge.until_body("ok\n").await;
    }
}

/// The file under `dir` whose path contains `part` (the registry keeps a
/// blob at `blobs/<org>/sha256/<hex>/<generation>`).
fn find_file(dir: &std::path::Path, part: &str) -> Option<std::path::PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find_file(&path, part) {
                return Some(found);
            }
        } else if path.to_string_lossy().contains(part) {
            return Some(path);
        }
    }
    None
}

/// Whether `runner` is the host `s` (its agent's identity).
pub(crate) fn is_host(s: &Server, runner: &str) -> bool {
    std::fs::read_to_string(s.data_dir.path().join("host-id")).is_ok_and(|id| id.trim() == runner)
}

/// SIGKILLs the API process, then its agent (so serve starts no other).
async fn kill(s: &mut Server) {
    let agent = std::fs::read_to_string(s.data_dir.path().join("agent/pid")).unwrap();
    for pid in [s.pid().unwrap().to_string(), agent.trim().to_owned()] {
        let status = tokio::process::Command::new("kill")
            .args(["-KILL", &pid])
            .status()
            .await
            .unwrap();
        assert!(status.success(), "kill {pid}");
    }
}
