//! `/apps/{id}/logs`: what the replicas printed, newest last; with
//! `follow=true`, the lines that follow too, as server-sent events.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::Path;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::routes::{Pairs, param};
use plateau_core::time;
use plateau_store::Db;
use plateau_store::apps::logs::{self, LogLine};
use serde::Serialize;
use utoipa::ToSchema;

use super::load;
use crate::Apps;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogLineView {
    /// The line's id: a follower resumes after it (`Last-Event-ID`).
    pub id: String,
    pub at: String,
    /// stdout or stderr.
    pub stream: String,
    pub line: String,
    pub deployment_id: String,
    /// The replica that printed the line (its host name in the
    /// container); null for Wasm apps, which run an instance per request.
    pub replica: Option<String>,
}

impl From<LogLine> for LogLineView {
    fn from(l: LogLine) -> Self {
        LogLineView {
            at: time::to_rfc3339(l.created_at),
            id: l.id,
            stream: l.stream,
            line: l.line,
            deployment_id: l.deployment,
            replica: l.replica,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct LogList {
    pub items: Vec<LogLineView>,
}

/// How often a follower looks for new lines (the agent writes them every
/// quarter second).
const FOLLOW_POLL: Duration = Duration::from_millis(500);
/// Lines a follower reads at a time.
const FOLLOW_BATCH: i64 = 500;

/// Runtime logs, newest last; `since` (RFC 3339) keeps the later ones.
/// With `follow=true` the answer is `text/event-stream`: the lines `since`
/// and `limit` select, then each new line as it is written, one event per
/// line (`id` the line's id, `data` the line as JSON), with a comment every
/// 15 s to keep proxies from closing it. A client that reconnects with
/// `Last-Event-ID` gets the lines after that one. The stream ends when the
/// app is deleted or put in the trash.
#[utoipa::path(get, path = "/apps/{id}/logs", tag = "apps",
    security(("bearer" = ["apps:read"])),
    params(("id" = String, Path, description = "app id"),
           ("since" = Option<String>, Query, format = DateTime, description = "RFC 3339 time; only lines at or after it"),
           ("limit" = Option<u32>, Query, description = "the newest lines, 1 to 1000, default 200"),
           ("follow" = Option<bool>, Query, description = "stream new lines as server-sent events"),
           ("Last-Event-ID" = Option<String>, Header, description = "with follow: resume after this line")),
    responses((status = 200, description = "log lines; with follow, a text/event-stream whose events' data are LogLineView",
        content((LogList = "application/json"), (String = "text/event-stream")))))]
pub async fn list(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
    pairs: Pairs,
) -> Result<Response, ApiError> {
    let since = match param(&pairs, "since") {
        Some(s) => Some(time::parse_rfc3339(s).ok_or_else(|| {
            ApiError::invalid(
                "since",
                "must be an RFC 3339 time such as 2026-11-24T08:00:00Z",
            )
        })?),
        None => None,
    };
    let limit = match param(&pairs, "limit") {
        Some(l) => l
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=1000).contains(n))
            .ok_or_else(|| ApiError::invalid("limit", "must be between 1 and 1000"))?,
        None => 200,
    };
    let follow = match param(&pairs, "follow") {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => return Err(ApiError::invalid("follow", "must be true or false")),
    };
    let app = load(apps.db(), &caller, &id).await?;
    let resume = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| plateau_core::id::is_well_formed(v, "log"))
        .map(str::to_owned);
    let first = match &resume {
        Some(after) if follow => logs::after(apps.db(), &app.id, after, FOLLOW_BATCH).await?,
        _ => logs::list(apps.db(), &app.id, since, limit).await?,
    };
    if !follow {
        let items = first.into_iter().map(LogLineView::from).collect();
        return Ok(Json(LogList { items }).into_response());
    }
    let after = first
        .last()
        .map(|l| l.id.clone())
        .or(resume)
        .unwrap_or_else(|| {
            // Nothing yet: follow from now on.
            plateau_core::id::time_boundary("log", time::now_ms() as u64)
        });
    let follower = Follower {
        db: apps.db().clone(),
        app_id: app.id,
        after,
        pending: first.into(),
        polls: 0,
    };
    let events = futures::stream::unfold(follower, |mut f| async move {
        let line = f.next().await?;
        let event = Event::default()
            .id(line.id.clone())
            .json_data(LogLineView::from(line))
            .unwrap_or_else(|_| Event::default().comment("unencodable line"));
        Some((Ok::<_, Infallible>(event), f))
    });
    Ok(Sse::new(events)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response())
}

/// Where a follower stands: lines read and not yet sent, and the id of
/// the last line read.
struct Follower {
    db: Db,
    app_id: String,
    after: String,
    pending: std::collections::VecDeque<LogLine>,
    polls: u32,
}

impl Follower {
    /// The next line, waiting for it; none once the app is gone.
    async fn next(&mut self) -> Option<LogLine> {
        loop {
            if let Some(line) = self.pending.pop_front() {
                return Some(line);
            }
            tokio::time::sleep(FOLLOW_POLL).await;
            self.polls += 1;
            if self.polls.is_multiple_of(20) && !self.app_exists().await {
                return None;
            }
            match logs::after(&self.db, &self.app_id, &self.after, FOLLOW_BATCH).await {
                Ok(lines) => {
                    if let Some(last) = lines.last() {
                        self.after = last.id.clone();
                    }
                    self.pending.extend(lines);
                }
                Err(e) => tracing::warn!(app = %self.app_id, error = %e, "following app logs"),
            }
        }
    }

    /// Whether the app is still there (a store error counts as yes).
    async fn app_exists(&self) -> bool {
        match plateau_store::apps::get_any(&self.db, &self.app_id).await {
            Ok(app) => app.is_some_and(|app| app.deleted_at.is_none()),
            Err(_) => true,
        }
    }
}
