//! Waiting for a managed resource (a cache, a database) to converge: the
//! API answers a create, a change or a delete before the host has made
//! it, with the resource `creating`, `updating` or `deleting`, and the
//! host's reconciler brings it to `running` (or `failed`) or removes it.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::Client;

/// How long a resource may take before a wait gives up (a guard against a
/// hang, not a measure: the waits print how long they took).
const CEILING: Duration = Duration::from_secs(180);

impl Client {
    /// Polls the resource at `path` until its `status` is `running`; its
    /// JSON. Panics with its `statusDetail` if it became `failed`.
    pub async fn wait_running(&self, path: &str) -> Value {
        self.wait_status(path, "running").await
    }

    /// Polls the resource at `path` until its `status` is `want`; its
    /// JSON. Panics if it became `failed` (unless that is `want`).
    pub async fn wait_status(&self, path: &str, want: &str) -> Value {
        let start = Instant::now();
        loop {
            let r = self.get(path).await;
            assert_eq!(r.status, 200, "GET {path}: {}", r.text());
            let v = r.json();
            let status = v["status"].as_str().unwrap_or_default();
            if status == want {
                eprintln!("{path} {want} after {:.2} s", start.elapsed().as_secs_f64());
                return v;
            }
            assert!(status != "failed", "{path} failed: {}", v["statusDetail"]);
            assert!(
                start.elapsed() < CEILING,
                "{path} still {status} after {} s: {v}",
                CEILING.as_secs()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Polls the resource at `path` until it is gone (404), after a
    /// delete.
    pub async fn wait_gone(&self, path: &str) {
        let start = Instant::now();
        loop {
            let r = self.get(path).await;
            if r.status == 404 {
                eprintln!("{path} gone after {:.2} s", start.elapsed().as_secs_f64());
                return;
            }
            assert_eq!(r.status, 200, "GET {path}: {}", r.text());
            assert!(
                start.elapsed() < CEILING,
                "{path} still there after {} s: {}",
                CEILING.as_secs(),
                r.text()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
