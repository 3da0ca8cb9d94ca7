//! `cargo xtask bench queues`: messages per second end to end through the
//! queues plugin (issue 19's target: at least 1,000 messages/s), with p50
//! and p99 of each operation. Half the clients send batches of 10, half
//! receive 10 at a time (long polling up to 1 s when the queue is empty)
//! and acknowledge what they got in one batch; the run ends when every
//! message is acknowledged. SQLite, release build.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::bail;
use serde_json::{Value, json};

use crate::harness::{Api, Samples, parse_flags, print_samples};
use crate::server::Server;

pub struct Options {
    pub messages: u64,
    pub connections: usize,
}

impl Options {
    pub fn parse(args: &[&str]) -> anyhow::Result<Options> {
        let mut opts = Options {
            messages: 20_000,
            connections: 32,
        };
        parse_flags(args, "--messages N, --connections N", |flag, value| {
            match flag {
                "--messages" => opts.messages = value.parse()?,
                "--connections" => opts.connections = value.parse()?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        if opts.connections < 2 {
            bail!("--connections must be at least 2 (producers and consumers)");
        }
        Ok(opts)
    }
}

pub async fn run(opts: Options) -> anyhow::Result<()> {
    let server = Server::start_release().await?;
    let api = Api::new(&server);
    let (status, body) = api
        .post(
            "/queues",
            &json!({ "name": "bench", "visibilityTimeoutSeconds": 120 }),
        )
        .await?;
    if status != 201 {
        bail!("creating the queue answered {status}: {body}");
    }
    let producers = opts.connections / 2;
    let consumers = opts.connections - producers;
    println!(
        "queues benchmark: {} messages, {producers} producers (batches of 10), {consumers} consumers (receive 10 with waitSeconds 1, ack in a batch), SQLite, release build\n",
        opts.messages
    );
    let batches = opts.messages.div_ceil(10);
    let next_batch = Arc::new(AtomicU64::new(0));
    let acked = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut sends = Vec::new();
    for _ in 0..producers {
        let (api, next_batch) = (api.clone(), next_batch.clone());
        sends.push(tokio::spawn(async move {
            let mut s = Samples::default();
            while next_batch.fetch_add(1, Ordering::Relaxed) < batches {
                let messages: Vec<Value> = (0..10)
                    .map(|i| json!({ "body": format!("{{\"n\":{i},\"payload\":\"0123456789abcdef\"}}") }))
                    .collect();
                loop {
                    let at = Instant::now();
                    let r = api
                        .post("/queues/bench/messages/batch", &json!({ "messages": messages }))
                        .await;
                    s.latencies.push(at.elapsed());
                    match r {
                        Ok((200, _)) => break,
                        Ok((409, _)) => s.conflicts += 1,
                        _ => s.errors += 1,
                    }
                }
            }
            (s, Samples::default())
        }));
    }
    let total = batches * 10;
    for _ in 0..consumers {
        let (api, acked) = (api.clone(), acked.clone());
        sends.push(tokio::spawn(async move {
            let mut receive = Samples::default();
            let mut ack = Samples::default();
            while acked.load(Ordering::Relaxed) < total {
                let at = Instant::now();
                let r = api
                    .post(
                        "/queues/bench/receive",
                        &json!({ "maxMessages": 10, "waitSeconds": 1 }),
                    )
                    .await;
                receive.latencies.push(at.elapsed());
                let messages = match r {
                    Ok((200, body)) => body["messages"].as_array().cloned().unwrap_or_default(),
                    Ok((409, _)) => {
                        receive.conflicts += 1;
                        continue;
                    }
                    _ => {
                        receive.errors += 1;
                        continue;
                    }
                };
                if messages.is_empty() {
                    receive.empty += 1;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                }
                let handles: Vec<&Value> = messages.iter().map(|m| &m["receiptHandle"]).collect();
                let at = Instant::now();
                let r = api
                    .post("/queues/bench/ack", &json!({ "receiptHandles": handles }))
                    .await;
                ack.latencies.push(at.elapsed());
                match r {
                    Ok((200, body)) => {
                        let n = body["acked"].as_array().map_or(0, Vec::len) as u64;
                        acked.fetch_add(n, Ordering::Relaxed);
                    }
                    Ok((409, _)) => ack.conflicts += 1,
                    _ => ack.errors += 1,
                }
            }
            (receive, ack)
        }));
    }
    let mut send = Samples::default();
    let mut receive = Samples::default();
    let mut ack = Samples::default();
    for (i, task) in sends.into_iter().enumerate() {
        let (a, b) = task.await?;
        if i < producers {
            send.merge(a);
        } else {
            receive.merge(a);
            ack.merge(b);
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    print_samples(&[
        ("send (batch of 10)", &send),
        ("receive (up to 10)", &receive),
        ("ack (batch)", &ack),
    ]);
    println!(
        "\nend to end: {total} messages sent, received and acknowledged in {seconds:.2} s: {:.0} messages/s",
        total as f64 / seconds
    );
    println!("target: >= 1000 messages/s end to end");
    Ok(())
}
