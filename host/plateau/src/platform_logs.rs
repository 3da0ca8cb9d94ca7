//! The log reader behind the plugins' `logs` capability: an
//! organisation's app log lines (`app_logs`) and timeline events, after a
//! cursor, on the platform's store. The cursor is `v1:{app line id}:{event
//! id}`, the last of each the reader was given; only rows at least
//! [`SETTLE_MS`] old are read, so a row whose transaction had not committed
//! when a later one was read is never passed over.

use async_trait::async_trait;
use plateau_api::routes::events::EventView;
use plateau_core::id::time_boundary;
use plateau_core::time;
use plateau_plugin_runtime::platform_logs::{
    LogPage, LogSource, LogsError, PlatformLine, PlatformLogs,
};
use plateau_store::Db;
use plateau_store::apps::logs;
use plateau_store::events;

/// How old a row must be to be read.
pub const SETTLE_MS: i64 = 1000;

/// The `logs` service of this host.
pub struct HostLogs {
    db: Db,
}

impl HostLogs {
    pub fn new(db: Db) -> HostLogs {
        HostLogs { db }
    }
}

/// Where a reader stands in each source.
#[derive(Debug, PartialEq, Eq)]
struct Cursor {
    app: String,
    event: String,
}

impl Cursor {
    /// The cursor of `now`: every row older than the settle window is behind.
    fn at(now: i64) -> Cursor {
        let boundary = u64::try_from(now - SETTLE_MS).unwrap_or(0);
        Cursor {
            app: time_boundary("log", boundary),
            event: time_boundary("evt", boundary),
        }
    }

    fn parse(text: &str) -> Result<Cursor, LogsError> {
        let invalid = || LogsError::Invalid("the cursor is not one this host answered".into());
        let mut parts = text.split(':');
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some("v1"), Some(app), Some(event), None)
                if app.starts_with("log_") && event.starts_with("evt_") =>
            {
                Ok(Cursor {
                    app: app.to_owned(),
                    event: event.to_owned(),
                })
            }
            _ => Err(invalid()),
        }
    }

    fn encode(&self) -> String {
        format!("v1:{}:{}", self.app, self.event)
    }
}

fn unavailable(e: plateau_store::Error) -> LogsError {
    tracing::warn!(error = %e, "reading logs for a plugin");
    LogsError::Unavailable("the platform's store could not be read".into())
}

fn millis(at: i64) -> u64 {
    u64::try_from(at).unwrap_or(0)
}

/// The two sources oldest first, each kept in its own (id) order, so that
/// any prefix of the result is a prefix of each: a cursor never passes a
/// line that was not answered.
fn merge(apps: Vec<PlatformLine>, events: Vec<PlatformLine>) -> Vec<PlatformLine> {
    let mut out = Vec::with_capacity(apps.len() + events.len());
    let mut apps = apps.into_iter().peekable();
    let mut events = events.into_iter().peekable();
    loop {
        let take_app = match (apps.peek(), events.peek()) {
            (Some(a), Some(e)) => a.at <= e.at,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return out,
        };
        let next = if take_app { apps.next() } else { events.next() };
        out.extend(next);
    }
}

#[async_trait]
impl PlatformLogs for HostLogs {
    async fn read(
        &self,
        org_id: &str,
        sources: &[LogSource],
        cursor: &str,
        limit: u32,
    ) -> Result<LogPage, LogsError> {
        let now = time::now_ms();
        if cursor.is_empty() {
            return Ok(LogPage {
                lines: Vec::new(),
                cursor: Cursor::at(now).encode(),
                more: false,
            });
        }
        let mut cursor = Cursor::parse(cursor)?;
        let settled = now - SETTLE_MS;
        // One more than the limit from each, to know whether more remain.
        let fetch = i64::from(limit) + 1;
        let mut apps = Vec::new();
        let mut events = Vec::new();
        if sources.contains(&LogSource::App) {
            let rows = logs::after_in_org(&self.db, org_id, &cursor.app, settled, fetch)
                .await
                .map_err(unavailable)?;
            apps.extend(rows.into_iter().map(|r| PlatformLine {
                source: LogSource::App,
                id: r.line.id,
                resource_id: r.line.app_id,
                resource_name: r.app_name,
                deployment: Some(r.line.deployment),
                replica: r.line.replica,
                channel: r.line.stream,
                message: r.line.line,
                at: millis(r.line.created_at),
            }));
        }
        if sources.contains(&LogSource::Event) {
            let rows = events::after(&self.db, org_id, &cursor.event, settled, fetch)
                .await
                .map_err(unavailable)?;
            events.extend(rows.into_iter().map(|e| {
                let (id, kind, resource, at) = (
                    e.id.clone(),
                    e.kind.clone(),
                    e.resource_id.clone().unwrap_or_default(),
                    e.created_at,
                );
                let message = serde_json::to_string(&EventView::from(e)).unwrap_or_default();
                PlatformLine {
                    source: LogSource::Event,
                    id,
                    resource_id: resource,
                    resource_name: kind,
                    deployment: None,
                    replica: None,
                    channel: "event".to_owned(),
                    message,
                    at: millis(at),
                }
            }));
        }
        let more = apps.len() + events.len() > limit as usize;
        let mut lines = merge(apps, events);
        lines.truncate(limit as usize);
        for line in &lines {
            match line.source {
                LogSource::App => cursor.app.clone_from(&line.id),
                LogSource::Event => cursor.event.clone_from(&line.id),
            }
        }
        Ok(LogPage {
            lines,
            cursor: cursor.encode(),
            more,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(source: LogSource, id: &str, at: u64) -> PlatformLine {
        PlatformLine {
            source,
            id: id.to_owned(),
            resource_id: String::new(),
            resource_name: String::new(),
            deployment: None,
            replica: None,
            channel: String::new(),
            message: String::new(),
            at,
        }
    }

    #[test]
    fn a_merge_keeps_each_sources_own_order() {
        // a2 is stamped before a1 (another host's clock): it still comes
        // after a1, so a page ending at a1 does not pass a2 over.
        let apps = vec![line(LogSource::App, "a1", 5), line(LogSource::App, "a2", 3)];
        let events = vec![
            line(LogSource::Event, "e1", 4),
            line(LogSource::Event, "e2", 6),
        ];
        let ids: Vec<String> = merge(apps, events).into_iter().map(|l| l.id).collect();
        assert_eq!(ids, ["e1", "a1", "a2", "e2"]);
    }

    #[test]
    fn cursors_round_trip_and_refuse_what_this_host_never_wrote() {
        let c = Cursor::at(1_700_000_000_000);
        assert_eq!(Cursor::parse(&c.encode()).unwrap(), c);
        for bad in ["", "v1", "v1:a:b", "v2:log_1:evt_1", "v1:log_1:evt_1:x"] {
            assert!(Cursor::parse(bad).is_err(), "{bad}");
        }
    }
}
