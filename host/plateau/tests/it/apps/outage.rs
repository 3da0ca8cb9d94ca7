//! The data plane outlives the API process: with `plateau serve` killed
//! (SIGKILL) and started again 20 s later, a Wasm app and a Linux app
//! (when runc is installed) under steady load keep answering through the
//! edge, which the host's agent runs; the restarted serve adopts what
//! runs, and no request gets a 404. Then the agent itself is killed: serve
//! starts it again, and while the apps load their names answer (held, or
//! 503 with `Retry-After`), never 404.

use std::time::{Duration, Instant};

use plateau_testkit::Backend;
use plateau_testkit::oci::{ImagePusher, busybox_layer};
use serde_json::json;

use super::{Answer, Apps, Edge, id, slug};
use crate::on_both_backends;

on_both_backends!(apps_serve_while_the_api_process_is_down);

/// How long the API process stays down.
const OUTAGE: Duration = Duration::from_secs(20);

/// One app under load: its edge and the body it answers.
struct Target {
    name: &'static str,
    edge: Edge,
    body: String,
}

/// Answers of one stretch of time, per app: (sent, failed, 404s, the
/// first failures, seconds until the first success).
struct Tally {
    sent: usize,
    failed: usize,
    not_found: usize,
    examples: Vec<Answer>,
    first_success: Option<f64>,
}

/// Requests every app in turn until `until` holds for the tallies so far;
/// tallies the answers per app.
async fn load(targets: &[Target], mut until: impl FnMut(&[Tally]) -> bool) -> Vec<Tally> {
    let started = Instant::now();
    let mut tallies: Vec<Tally> = targets
        .iter()
        .map(|_| Tally {
            sent: 0,
            failed: 0,
            not_found: 0,
            examples: Vec::new(),
            first_success: None,
        })
        .collect();
    while !until(&tallies) {
        for (t, tally) in targets.iter().zip(&mut tallies) {
            let answer = t.edge.get("/").await;
            tally.sent += 1;
            if matches!(&answer, Ok((200, b)) if *b == t.body) {
                tally
                    .first_success
                    .get_or_insert(started.elapsed().as_secs_f64());
                continue;
            }
            tally.failed += 1;
            if matches!(&answer, Ok((404, _))) {
                tally.not_found += 1;
            }
            if tally.examples.len() < 3 {
                tally.examples.push(answer);
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tallies
}

fn report(stretch: &str, targets: &[Target], tallies: &[Tally]) {
    for (t, tally) in targets.iter().zip(tallies) {
        eprintln!(
            "apps outage, {stretch}, {} app: {} requests sent, {} failed ({} 404), first success after {:?} s; first failures {:?}",
            t.name, tally.sent, tally.failed, tally.not_found, tally.first_success, tally.examples
        );
    }
}

async fn apps_serve_while_the_api_process_is_down(backend: Backend) {
    let mut env = Apps::start(backend).await;
    let c = env.client();
    let wasm = env.deployed("Outage wasm", &env.v1.clone()).await;
    let mut targets = vec![Target {
        name: "wasm",
        edge: Edge::new(&env.server, &slug(&wasm)),
        body: "hello from v1".to_owned(),
    }];
    if plateau_runner::container::check_runc().is_ok() {
        let registry = ImagePusher::new(&env.server.url, &env.token);
        let repo = format!("{}/outage", env.org);
        let image = registry
            .push_busybox(&repo, "v1", "v1", &busybox_layer(), true)
            .await;
        let r = c.post("/apps", json!({ "name": "Outage linux" })).await;
        assert_eq!(r.status, 201, "{}", r.text());
        let linux = r.json();
        let r = c
            .post(
                &format!("/apps/{}/env", id(&linux)),
                json!({ "env": { "GREETING": "hello from busybox" } }),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text());
        let r = c
            .post(
                &format!("/apps/{}/deployments", id(&linux)),
                json!({ "image": image }),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text());
        let first = env.settled(&id(&linux), &id(&r.json())).await;
        assert_eq!(first["status"], "live", "{first}");
        targets.push(Target {
            name: "linux",
            edge: Edge::new(&env.server, &slug(&linux)),
            body: "hello from busybox v1\n".to_owned(),
        });
    } else {
        eprintln!("apps outage: runc is not installed; the Wasm app only");
    }
    for t in &targets {
        t.edge.until_body(&t.body).await;
    }

    // Down: SIGKILL, then 20 s of requests through the edge.
    let serve = env.server.pid().expect("serve runs");
    std::process::Command::new("kill")
        .args(["-KILL", &serve.to_string()])
        .status()
        .expect("kill runs");
    env.server.exited().await;
    let down = Instant::now();
    let during = load(&targets, |_| down.elapsed() >= OUTAGE).await;
    report("while serve was down", &targets, &during);

    // Up again: serve adopts the agent; requests go on meanwhile.
    let restart = tokio::spawn(async move {
        env.server.restart().await;
        env
    });
    let after = load(&targets, |_| restart.is_finished()).await;
    let env = restart.await.unwrap();
    let settled = Instant::now();
    let later = load(&targets, |_| settled.elapsed() >= Duration::from_secs(3)).await;
    report("while serve started again", &targets, &after);
    report("after serve started again", &targets, &later);

    for ((t, d), (a, l)) in targets.iter().zip(&during).zip(after.iter().zip(&later)) {
        assert!(
            d.sent > 0,
            "{}: requests were sent during the outage",
            t.name
        );
        assert_eq!(
            d.failed, 0,
            "{}: no request fails while the API process is down: {:?}",
            t.name, d.examples
        );
        assert_eq!(
            a.not_found + l.not_found,
            0,
            "{}: no 404 after the restart: {:?} {:?}",
            t.name,
            a.examples,
            l.examples
        );
    }
    let r = env.client().get(&format!("/apps/{}", id(&wasm))).await;
    assert_eq!(r.json()["status"], "running", "{}", r.text());

    // The agent killed: serve starts another, which loads the apps again
    // on the same edge address.
    let pid = std::fs::read_to_string(env.server.data_dir.path().join("agent/pid")).unwrap();
    std::process::Command::new("kill")
        .args(["-KILL", pid.trim()])
        .status()
        .expect("kill runs");
    let killed = Instant::now();
    let reload = load(&targets, |tallies| {
        tallies.iter().all(|t| t.first_success.is_some())
            || killed.elapsed() > Duration::from_secs(90)
    })
    .await;
    report("after the agent was killed", &targets, &reload);
    for (t, r) in targets.iter().zip(&reload) {
        assert_eq!(
            r.not_found, 0,
            "{}: a loading app is no 404: {:?}",
            t.name, r.examples
        );
    }
}
