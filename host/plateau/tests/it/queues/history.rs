//! A Jepsen-style history test: concurrent producers and consumers record
//! every send, receive and acknowledgement with its outcome (ok, failed,
//! or unknown when no whole answer came back), the server is killed with
//! SIGKILL in the middle of the run and started again on the same store,
//! and a checker proves from the history that
//!
//! - no acknowledged send is lost: each was delivered, and delivered until
//!   it was acknowledged (or its last acknowledgement's outcome is unknown);
//! - nothing acknowledged comes back: no receive that started after an
//!   acknowledgement succeeded returns that message;
//! - nothing appears that was not sent.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use plateau_testkit::{Backend, Client, ServerOptions};
use serde_json::{Value, json};

use crate::start_with;

crate::on_both_backends!(no_acknowledged_send_is_lost_across_a_sigkill);

const PRODUCERS: usize = 4;
const CONSUMERS: usize = 4;
const BATCHES: usize = 40;
const BATCH: usize = 5;
/// Sends acknowledged before the server is killed.
const KILL_AFTER: usize = 250;

/// One recorded operation.
#[derive(Debug, Clone)]
enum Op {
    /// A batch send: its bodies and whether the server said yes.
    Send {
        bodies: Vec<String>,
        outcome: Outcome,
    },
    /// A receive that started at `start` and returned `(body, receives)`.
    Receive {
        start: Instant,
        got: Vec<(String, u64)>,
    },
    /// An acknowledgement of `body`, finished at `end`.
    Ack {
        body: String,
        end: Instant,
        outcome: Outcome,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Ok,
    Failed,
    Unknown,
}

/// The shared run: the current client (none while the server is down),
/// the history and the counters.
struct Run {
    client: RwLock<Option<Client>>,
    history: Mutex<Vec<Op>>,
    acked_sends: AtomicUsize,
    producers_done: AtomicUsize,
    stop: AtomicBool,
}

impl Run {
    fn client(&self) -> Option<Client> {
        self.client.read().unwrap().clone()
    }

    fn record(&self, op: Op) {
        self.history.lock().unwrap().push(op);
    }
}

fn outcome(r: &Result<plateau_testkit::Response, reqwest::Error>) -> Outcome {
    match r {
        Ok(r) if r.status < 300 => Outcome::Ok,
        // 4xx keeps nothing of the request (409: a lost race, retried).
        Ok(r) if r.status < 500 => Outcome::Failed,
        // A 5xx or no answer: the commit may or may not have happened.
        _ => Outcome::Unknown,
    }
}

async fn produce(run: Arc<Run>, p: usize) {
    for b in 0..BATCHES {
        let bodies: Vec<String> = (0..BATCH).map(|i| format!("p{p}-{b}-{i}")).collect();
        loop {
            let Some(c) = run.client() else {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            };
            let messages: Vec<Value> = bodies.iter().map(|b| json!({ "body": b })).collect();
            let r = c
                .request(reqwest::Method::POST, "/queues/h/messages/batch")
                .json(&json!({ "messages": messages }))
                .try_send()
                .await;
            let outcome = outcome(&r);
            run.record(Op::Send {
                bodies: bodies.clone(),
                outcome,
            });
            match outcome {
                Outcome::Ok => {
                    run.acked_sends.fetch_add(BATCH, Ordering::SeqCst);
                    break;
                }
                // An unknown send is not retried: it stays in the history
                // as maybe-sent, and the next batch goes on.
                Outcome::Unknown => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    break;
                }
                Outcome::Failed => {}
            }
        }
    }
    run.producers_done.fetch_add(1, Ordering::SeqCst);
}

async fn consume(run: Arc<Run>, n: usize) {
    let mut seen = 0usize;
    while !run.stop.load(Ordering::SeqCst) {
        let Some(c) = run.client() else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        let start = Instant::now();
        let r = c
            .request(reqwest::Method::POST, "/queues/h/receive")
            .json(&json!({ "maxMessages": 10 }))
            .try_send()
            .await;
        let messages = match &r {
            Ok(r) if r.status == 200 => r.json()["messages"].as_array().unwrap().clone(),
            _ => {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        run.record(Op::Receive {
            start,
            got: messages
                .iter()
                .map(|m| {
                    (
                        m["body"].as_str().unwrap().to_owned(),
                        m["receives"].as_u64().unwrap(),
                    )
                })
                .collect(),
        });
        if messages.is_empty() {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        }
        // Every tenth first delivery goes unacknowledged, to come back
        // when its visibility timeout ends.
        let mut to_ack = Vec::new();
        for m in &messages {
            seen += 1;
            if m["receives"] == 1 && (seen + n).is_multiple_of(10) {
                continue;
            }
            to_ack.push(m.clone());
        }
        if to_ack.is_empty() {
            continue;
        }
        let handles: Vec<&Value> = to_ack.iter().map(|m| &m["receiptHandle"]).collect();
        let r = c
            .request(reqwest::Method::POST, "/queues/h/ack")
            .json(&json!({ "receiptHandles": handles }))
            .try_send()
            .await;
        let end = Instant::now();
        let acked: HashSet<String> = match &r {
            Ok(r) if r.status == 200 => r.json()["acked"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h.as_str().unwrap().to_owned())
                .collect(),
            _ => HashSet::new(),
        };
        let batch_outcome = outcome(&r);
        for m in to_ack {
            let handle = m["receiptHandle"].as_str().unwrap();
            let outcome = match batch_outcome {
                Outcome::Ok if acked.contains(handle) => Outcome::Ok,
                Outcome::Ok => Outcome::Failed,
                other => other,
            };
            run.record(Op::Ack {
                body: m["body"].as_str().unwrap().to_owned(),
                end,
                outcome,
            });
        }
    }
}

async fn no_acknowledged_send_is_lost_across_a_sigkill(backend: Backend) {
    let mut s = start_with(ServerOptions::new(backend)).await;
    let r = s
        .client()
        .post(
            "/queues",
            json!({ "name": "h", "visibilityTimeoutSeconds": 2 }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let run = Arc::new(Run {
        client: RwLock::new(Some(s.client())),
        history: Mutex::new(Vec::new()),
        acked_sends: AtomicUsize::new(0),
        producers_done: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
    });
    let mut tasks = Vec::new();
    for p in 0..PRODUCERS {
        tasks.push(tokio::spawn(produce(run.clone(), p)));
    }
    for n in 0..CONSUMERS {
        tasks.push(tokio::spawn(consume(run.clone(), n)));
    }

    // Mid-run: SIGKILL, then the same store again.
    while run.acked_sends.load(Ordering::SeqCst) < KILL_AFTER {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let pid = s.pid().expect("the server runs");
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    *run.client.write().unwrap() = None;
    s.exited().await;
    s.restart().await;
    *run.client.write().unwrap() = Some(s.client());

    // Drain: producers finish, consumers empty the queue.
    while run.producers_done.load(Ordering::SeqCst) < PRODUCERS {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let c = s.client();
    let mut last = Value::Null;
    for _ in 0..1200 {
        last = c.get("/queues/h/stats").await.json();
        if last["total"] == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    run.stop.store(true, Ordering::SeqCst);
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(last["total"], 0, "the queue drains: {last}");

    check(&run.history.lock().unwrap());
}

/// The checker.
fn check(history: &[Op]) {
    let mut sent_ok = HashSet::new();
    let mut maybe_sent = HashSet::new();
    let mut receives: HashMap<&str, Vec<Instant>> = HashMap::new();
    let mut redelivered = 0;
    // Per body: when an ack succeeded, and whether its last ack is unknown.
    let mut acked_at: HashMap<&str, Instant> = HashMap::new();
    let mut last_ack: HashMap<&str, Outcome> = HashMap::new();
    let mut unknown = 0;
    for op in history {
        match op {
            Op::Send { bodies, outcome } => {
                let set = match outcome {
                    Outcome::Ok => &mut sent_ok,
                    Outcome::Unknown => {
                        unknown += 1;
                        &mut maybe_sent
                    }
                    Outcome::Failed => continue,
                };
                set.extend(bodies.iter().map(String::as_str));
            }
            Op::Receive { start, got } => {
                for (body, n) in got {
                    receives.entry(body).or_default().push(*start);
                    if *n > 1 {
                        redelivered += 1;
                    }
                }
            }
            Op::Ack { body, end, outcome } => {
                if *outcome == Outcome::Unknown {
                    unknown += 1;
                }
                if *outcome == Outcome::Ok {
                    let at = acked_at.entry(body).or_insert(*end);
                    *at = (*at).min(*end);
                }
                last_ack.insert(body, *outcome);
            }
        }
    }
    assert!(
        redelivered > 0,
        "the run exercised redelivery after a visibility timeout"
    );
    for body in &sent_ok {
        assert!(
            receives.contains_key(body),
            "acknowledged send {body} was lost"
        );
        assert!(
            acked_at.contains_key(body) || last_ack.get(body) == Some(&Outcome::Unknown),
            "{body} was neither acknowledged nor delivered again after its last try"
        );
    }
    for (body, starts) in &receives {
        assert!(
            sent_ok.contains(body) || maybe_sent.contains(body),
            "{body} was received but never sent"
        );
        if let Some(acked) = acked_at.get(body) {
            assert!(
                starts.iter().all(|s| s < acked),
                "{body} came back in a receive that started after its acknowledgement"
            );
        }
    }
    println!(
        "history: {} ops, {} sent, {} maybe sent, {} redeliveries, {} unknown outcomes",
        history.len(),
        sent_ok.len(),
        maybe_sent.len(),
        redelivered,
        unknown
    );
}
