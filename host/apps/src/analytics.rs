//! Web analytics at the edge, in the agent: which apps' page views the
//! edge reports (`app_analytics`, followed with the rest of an app's
//! edge), and the queue that hands them to the analytics plugin.
//!
//! The edge pushes each page view without waiting into a bounded queue;
//! one task takes them in batches, once a second, and schedules one
//! durable plugin job per organisation and batch (`edge:<id>`, due at
//! once, at most [`MAX_VIEWS`] page views and [`MAX_PAYLOAD`] bytes),
//! written in one transaction; the analytics plugin's `on_job` counts
//! them. When the
//! database is slow the queue fills and further page views are dropped
//! and counted: a request is never held for its page view.
//!
//! The client's address never reaches the database: a page view carries
//! [`client_key`] instead (a SHA-256 of the address), and only until its
//! job runs; the plugin hashes it with the day's salt into the visitor.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use plateau_core::id::new_id;
use plateau_edge::Edge;
use plateau_edge::page_views::{Counted, PageView, PageViewSink};
use plateau_store::Db;
use plateau_store::apps::App;
use plateau_store::apps::analytics;
use plateau_store::jobs::{self, JobKey};
use serde_json::json;
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

/// The plugin the page views go to.
pub const PLUGIN: &str = "analytics";
/// The largest payload of one job.
pub const MAX_PAYLOAD: usize = 60_000;
/// The most page views in one job: the plugin counts one with up to about
/// 65 key-value writes, and a call may buffer 1,000.
pub const MAX_VIEWS: usize = 12;
const QUEUE: usize = 20_000;
const BATCH: usize = 1_000;
const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// Brings the edge's analytics switch of `app` in step with the database.
pub async fn sync(db: &Db, edge: &Edge, app: &App) -> plateau_store::Result<()> {
    let on = analytics::enabled(db, &app.id).await? && app.deleted_at.is_none();
    edge.set_analytics(
        &app.slug,
        on.then(|| Counted {
            org_id: app.org_id.clone(),
            app_id: app.id.clone(),
        }),
    );
    Ok(())
}

/// What a page view carries instead of the client's address.
pub fn client_key(ip: std::net::IpAddr) -> String {
    let digest = Sha256::digest(format!("plateau-analytics-client\0{ip}").as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The sending end, given to the edge.
pub struct PageViewQueue {
    tx: mpsc::Sender<PageView>,
    dropped: AtomicU64,
}

impl PageViewQueue {
    /// A queue writing jobs to `db` from a task of its own.
    pub fn start(db: Db) -> Arc<PageViewQueue> {
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(deliver(db, rx));
        Arc::new(PageViewQueue {
            tx,
            dropped: AtomicU64::new(0),
        })
    }
}

impl PageViewSink for PageViewQueue {
    fn push(&self, view: PageView) {
        if self.tx.try_send(view).is_err() {
            let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_power_of_two() {
                tracing::warn!(
                    dropped = n,
                    "analytics: the page view queue is full; page views dropped"
                );
            }
        }
    }
}

async fn deliver(db: Db, mut rx: mpsc::Receiver<PageView>) {
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        if rx.recv_many(&mut batch, BATCH).await == 0 {
            return;
        }
        let payloads = payloads(&batch);
        if let Err(e) = schedule(&db, &payloads).await {
            tracing::warn!(error = %e, views = batch.len(), "analytics: handing page views to the plugin");
        }
        batch.clear();
        tokio::time::sleep(FLUSH_EVERY).await;
    }
}

/// The jobs' payloads of `views`: per organisation, `{"views": [...]}` of
/// at most [`MAX_VIEWS`] page views and [`MAX_PAYLOAD`] bytes each.
pub fn payloads(views: &[PageView]) -> Vec<(String, String)> {
    let mut by_org: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for v in views {
        let item = json!({
            "app": v.app_id,
            "host": v.host,
            "path": v.path,
            "query": v.query,
            "referrer": v.referrer,
            "ua": v.user_agent,
            "client": client_key(v.client_ip),
            "status": v.status,
            "at": v.at,
        });
        by_org.entry(&v.org_id).or_default().push(item.to_string());
    }
    let mut out = Vec::new();
    for (org, items) in by_org {
        let mut chunk: Vec<&str> = Vec::new();
        let mut size = 0;
        for item in &items {
            if !chunk.is_empty()
                && (size + item.len() + 16 > MAX_PAYLOAD || chunk.len() == MAX_VIEWS)
            {
                out.push((
                    org.to_owned(),
                    format!("{{\"views\":[{}]}}", chunk.join(",")),
                ));
                chunk.clear();
                size = 0;
            }
            size += item.len() + 1;
            chunk.push(item);
        }
        if !chunk.is_empty() {
            out.push((
                org.to_owned(),
                format!("{{\"views\":[{}]}}", chunk.join(",")),
            ));
        }
    }
    out
}

async fn schedule(db: &Db, payloads: &[(String, String)]) -> plateau_store::Result<()> {
    let mut tx = db.begin().await?;
    for (org, payload) in payloads {
        let job = JobKey {
            plugin: PLUGIN.to_owned(),
            namespace: org.clone(),
            kind: "job".to_owned(),
            key: format!("edge:{}", new_id("pvb")),
        };
        // Due at once whatever the host clock says (a manual one too).
        jobs::schedule(&mut tx, &job, 0, None, payload).await?;
    }
    tx.commit().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(org: &str, path: &str) -> PageView {
        PageView {
            org_id: org.into(),
            app_id: "app_1".into(),
            host: "shop.example".into(),
            path: path.into(),
            query: String::new(),
            referrer: String::new(),
            user_agent: "Mozilla/5.0".into(),
            client_ip: "203.0.113.5".parse().unwrap(),
            status: 200,
            at: 1,
        }
    }

    #[test]
    fn payloads_are_per_organisation_bounded_and_hold_no_address() {
        let long = format!("/{}", "a".repeat(500));
        let mut views: Vec<PageView> = (0..300).map(|_| view("org_1", &long)).collect();
        views.push(view("org_2", "/"));
        let out = payloads(&views);
        assert!(out.len() > 2);
        assert!(out.iter().all(|(_, p)| p.len() <= MAX_PAYLOAD));
        assert_eq!(out.len(), 300usize.div_ceil(MAX_VIEWS) + 1);
        let mut counted = 0;
        for (org, p) in &out {
            assert!(!p.contains("203.0.113.5"));
            let v: serde_json::Value = serde_json::from_str(p).unwrap();
            counted += v["views"].as_array().unwrap().len();
            if org == "org_2" {
                assert_eq!(v["views"][0]["path"], "/");
            }
        }
        assert_eq!(counted, 301);
    }
}
