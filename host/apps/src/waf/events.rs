//! Where the firewall's matches go: a bounded queue the request path
//! pushes to without waiting, written to `waf_events` in batches by one
//! task. When the database is slow the queue fills and further events are
//! dropped and counted (the request is never held for its event).

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use plateau_contract::edge::RequestHead;
use plateau_core::id::new_id;
use plateau_store::Db;
use plateau_store::waf::{self, EventRow};
use tokio::sync::mpsc;

const QUEUE: usize = 10_000;
const BATCH: usize = 500;
const FLUSH_EVERY: Duration = Duration::from_millis(200);

/// The sending end; cheap to clone.
#[derive(Clone)]
pub struct EventSink {
    tx: mpsc::Sender<EventRow>,
    dropped: Arc<AtomicU64>,
}

impl EventSink {
    /// A sink writing to `db` from a task of its own.
    pub fn start(db: Db) -> EventSink {
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(write(db, rx));
        EventSink {
            tx,
            dropped: Arc::new(AtomicU64::new(0)),
        }
    }

    pub fn push(&self, event: EventRow) {
        if self.tx.try_send(event).is_err() {
            let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_power_of_two() {
                tracing::warn!(dropped = n, "waf: the event queue is full; events dropped");
            }
        }
    }
}

async fn write(db: Db, mut rx: mpsc::Receiver<EventRow>) {
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        if rx.recv_many(&mut batch, BATCH).await == 0 {
            return;
        }
        if let Err(e) = waf::record(&db, &batch).await {
            tracing::warn!(error = %e, events = batch.len(), "waf: writing events");
        }
        batch.clear();
        tokio::time::sleep(FLUSH_EVERY).await;
    }
}

/// The event of `rule_id` taking `action` on `head`, for the app
/// `(org_id, app_id)`: the request's facts, the user agent cut to 512
/// characters and the path to 2048.
pub fn row(
    (org_id, app_id): (&str, &str),
    rule_id: &str,
    action: &str,
    head: &RequestHead,
    net: &str,
    now: i64,
) -> EventRow {
    EventRow {
        id: new_id("wev"),
        org_id: org_id.to_owned(),
        app_id: app_id.to_owned(),
        rule_id: rule_id.to_owned(),
        action: action.to_owned(),
        method: head.method.clone(),
        host: head.host.clone(),
        path: head.path.chars().take(2048).collect(),
        client_net: net.to_owned(),
        user_agent: head
            .header("user-agent")
            .unwrap_or("")
            .chars()
            .take(512)
            .collect(),
        at: now,
    }
}

/// The network a client's address is recorded as: its /24 (IPv4) or /48
/// (IPv6), never the whole address.
pub fn network(ip: Option<IpAddr>) -> String {
    match ip {
        Some(IpAddr::V4(v4)) => {
            let [a, b, c, _] = v4.octets();
            format!("{a}.{b}.{c}.0/24")
        }
        Some(IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => network(Some(IpAddr::V4(v4))),
            None => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}::/48", s[0], s[1], s[2])
            }
        },
        None => String::new(),
    }
}
