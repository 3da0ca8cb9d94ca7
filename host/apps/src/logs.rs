//! Apps' runtime logs: replicas print into a [`DeploymentLogs`] sink,
//! which buffers lines in memory; a task writes them to the store every
//! quarter second in one transaction and trims each app to its retention.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use plateau_core::id::new_id;
use plateau_core::time;
use plateau_runner::{LogSink, Stream};
use plateau_store::Db;
use plateau_store::apps::logs::{self, LogLine};

/// Lines buffered before new ones are dropped (the store is behind).
const MAX_BUFFERED: usize = 50_000;
const FLUSH_EVERY: Duration = Duration::from_millis(250);

pub struct LogBuffer {
    db: Db,
    retention: i64,
    pending: Mutex<Vec<LogLine>>,
}

impl LogBuffer {
    pub fn new(db: Db, retention: i64) -> LogBuffer {
        LogBuffer {
            db,
            retention,
            pending: Mutex::new(Vec::new()),
        }
    }

    /// A sink for one deployment's replicas.
    pub fn sink(self: &Arc<Self>, app_id: &str, deployment_id: &str) -> Arc<dyn LogSink> {
        Arc::new(DeploymentLogs {
            buffer: self.clone(),
            app_id: app_id.to_owned(),
            deployment_id: deployment_id.to_owned(),
        })
    }

    fn push(&self, line: LogLine) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if pending.len() < MAX_BUFFERED {
            pending.push(line);
        }
    }

    pub async fn flush(&self) {
        let lines = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()));
        if let Err(e) = logs::append(&self.db, &lines, self.retention).await {
            tracing::warn!(error = %e, lines = lines.len(), "writing app logs");
        }
    }

    pub async fn keep_flushing(self: Arc<Self>) {
        let mut every = tokio::time::interval(FLUSH_EVERY);
        loop {
            every.tick().await;
            self.flush().await;
        }
    }
}

struct DeploymentLogs {
    buffer: Arc<LogBuffer>,
    app_id: String,
    deployment_id: String,
}

impl LogSink for DeploymentLogs {
    fn line(&self, replica: Option<&str>, stream: Stream, line: String) {
        self.buffer.push(LogLine {
            id: new_id("log"),
            app_id: self.app_id.clone(),
            deployment: self.deployment_id.clone(),
            replica: replica.map(str::to_owned),
            stream: stream.as_str().to_owned(),
            line,
            created_at: time::now_ms(),
        });
    }
}
