//! The event timeline (`GET /events`) and the audit log (`GET /audit`,
//! `GET /audit/export`) of spec section 6.

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::StreamExt as _;
use plateau_core::time;
use plateau_store::Db;
use plateau_store::events::{self, Event, Filter};
use serde::Serialize;
use utoipa::ToSchema;

use super::{Pairs, page_and_filters, param};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::json::Validator;
use crate::pagination::{Page, Pager};
use crate::state::AppState;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventView {
    pub id: String,
    /// `resource.verb`: `project.created`.
    #[serde(rename = "type")]
    pub kind: String,
    pub category: String,
    pub action: String,
    /// Part of the audit log.
    pub audit: bool,
    pub actor: ActorView,
    pub resource_type: Option<String>,
    pub resource_id: Option<String>,
    #[schema(value_type = Object)]
    pub data: serde_json::Value,
    pub created_at: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActorView {
    /// user, token, grant, admin, system or plugin.
    #[serde(rename = "type")]
    pub kind: String,
    pub id: Option<String>,
    /// The user a token or grant acts for.
    pub user_id: Option<String>,
    /// Source address of the request.
    pub ip: Option<String>,
}

impl From<Event> for EventView {
    fn from(e: Event) -> Self {
        EventView {
            id: e.id,
            kind: e.kind,
            category: e.category,
            action: e.action,
            audit: e.audit != 0,
            actor: ActorView {
                kind: e.actor_type,
                id: e.actor_id,
                user_id: e.actor_user_id,
                ip: e.actor_ip,
            },
            resource_type: e.resource_type,
            resource_id: e.resource_id,
            data: serde_json::from_str(&e.data).unwrap_or(serde_json::Value::Null),
            created_at: time::to_rfc3339(e.created_at),
        }
    }
}

/// `from` and `to` accept RFC 3339 timestamps or `YYYY-MM-DD` dates.
fn time_bound(pairs: &[(String, String)], name: &str, v: &mut Validator) -> Option<i64> {
    let raw = param(pairs, name)?;
    let parsed =
        time::parse_rfc3339(raw).or_else(|| time::parse_date(raw).map(time::date_start_ms));
    v.check(
        parsed.is_some(),
        name,
        "must be an RFC 3339 timestamp or a YYYY-MM-DD date",
    );
    parsed
}

fn filter_of(pairs: &[(String, String)], audit: bool) -> Result<Filter, ApiError> {
    let mut v = Validator::new();
    let owned = |name: &str| param(pairs, name).map(str::to_owned);
    let filter = Filter {
        audit_only: audit,
        types: param(pairs, "type")
            .map(|t| {
                t.split(',')
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
        category: owned("category"),
        action: owned("action"),
        actor: owned("actor"),
        resource_type: owned("resourceType"),
        from: time_bound(pairs, "from", &mut v),
        to: time_bound(pairs, "to", &mut v),
    };
    v.finish()?;
    Ok(filter)
}

/// The organisation's timeline, newest first, filterable by type
/// (comma-separated; `project.*` matches a prefix) and time range.
#[utoipa::path(get, path = "/events", tag = "events",
    security(("bearer" = ["observability:read"])),
    params(("type" = Option<String>, Query, description = "event types, comma-separated; a trailing * matches a prefix"),
           ("from" = Option<String>, Query, description = "inclusive start: RFC 3339 or YYYY-MM-DD"),
           ("to" = Option<String>, Query, description = "exclusive end: RFC 3339 or YYYY-MM-DD"),
           ("limit" = Option<u32>, Query, description = "page size, 1 to 200; turns pagination on"),
           ("cursor" = Option<String>, Query, description = "nextCursor of the previous page")),
    responses((status = 200, description = "events, newest first", body = Page<EventView>)))]
pub async fn timeline(
    State(app): State<AppState>,
    caller: Caller,
    pairs: Pairs,
) -> Result<Json<Page<EventView>>, ApiError> {
    let filter = Filter {
        category: None,
        action: None,
        actor: None,
        resource_type: None,
        ..filter_of(&pairs, false)?
    };
    list(&app, &caller, &pairs, "events", &filter)
        .await
        .map(Json)
}

/// The audit log: security and configuration changes, newest first.
/// Owners and admins only.
#[utoipa::path(get, path = "/audit", tag = "events",
    security(("bearer" = ["audit:read"])),
    params(("category" = Option<String>, Query, description = "members, tokens, resources, integrations, settings, ..."),
           ("action" = Option<String>, Query, description = "create, update, delete, revoke, ..."),
           ("actor" = Option<String>, Query, description = "token, user, grant or plugin id"),
           ("resourceType" = Option<String>, Query, description = "project, token, connect_grant, ..."),
           ("type" = Option<String>, Query, description = "event types, comma-separated"),
           ("from" = Option<String>, Query, description = "inclusive start: RFC 3339 or YYYY-MM-DD"),
           ("to" = Option<String>, Query, description = "exclusive end: RFC 3339 or YYYY-MM-DD"),
           ("limit" = Option<u32>, Query, description = "page size, 1 to 200; turns pagination on"),
           ("cursor" = Option<String>, Query, description = "nextCursor of the previous page")),
    responses((status = 200, description = "audit entries, newest first", body = Page<EventView>)))]
pub async fn audit(
    State(app): State<AppState>,
    caller: Caller,
    pairs: Pairs,
) -> Result<Json<Page<EventView>>, ApiError> {
    caller.require_manager("the audit log")?;
    let filter = filter_of(&pairs, true)?;
    list(&app, &caller, &pairs, "audit", &filter)
        .await
        .map(Json)
}

async fn list(
    app: &AppState,
    caller: &Caller,
    pairs: &[(String, String)],
    name: &'static str,
    filter: &Filter,
) -> Result<Page<EventView>, ApiError> {
    let (page, filters) = page_and_filters(pairs);
    let pager = Pager::new(app.cursors(), &page, name, &caller.org_id, filters)?;
    let listed = events::list(app.db(), &caller.org_id, filter, pager.keyset()).await?;
    Ok(pager.finish(listed, |e| e.id.clone(), EventView::from))
}

/// The audit log as CSV (RFC 4180: CRLF line ends, quoted fields; cells
/// that a spreadsheet would run as a formula are prefixed with `'`).
/// Takes the filters of `GET /audit`.
///
/// The body streams: pages of [`EXPORT_PAGE`] events are read (keyset on
/// the id, newest first) and written out one after the other, each only
/// when the client has taken the one before, so memory stays flat however
/// many events match. The first page is read before answering, so a
/// database that fails at once gives a problem document; one that fails
/// later cuts the body short (the CSV then lacks its last line end).
#[utoipa::path(get, path = "/audit/export", tag = "events",
    security(("bearer" = ["audit:read"])),
    params(("category" = Option<String>, Query, description = "as on GET /audit"),
           ("action" = Option<String>, Query, description = "as on GET /audit"),
           ("actor" = Option<String>, Query, description = "as on GET /audit"),
           ("resourceType" = Option<String>, Query, description = "as on GET /audit"),
           ("from" = Option<String>, Query, description = "as on GET /audit"),
           ("to" = Option<String>, Query, description = "as on GET /audit")),
    responses((status = 200, description = "CSV with a header row", content_type = "text/csv", body = String)))]
pub async fn export(
    State(app): State<AppState>,
    caller: Caller,
    pairs: Pairs,
) -> Result<Response, ApiError> {
    caller.require_manager("the audit log")?;
    let mut walk = ExportWalk {
        db: app.db().clone(),
        org_id: caller.org_id.clone(),
        filter: filter_of(&pairs, true)?,
        before: None,
        done: false,
    };
    let first = walk.next_page().await?;
    let mut head = csv_writer();
    head.write_record(CSV_HEADER).map_err(internal)?;
    let head = head.into_inner().map_err(|e| internal(e.into_error()))?;
    let first = Bytes::from([head, first.unwrap_or_default()].concat());
    let rest = futures::stream::try_unfold(walk, |mut walk| async move {
        let page = walk.next_page().await.inspect_err(|e| {
            tracing::error!(error = %e, "the audit export stopped: the body is cut short");
        })?;
        Ok::<_, ApiError>(page.map(|chunk| (Bytes::from(chunk), walk)))
    });
    let body = Body::from_stream(futures::stream::once(async { Ok(first) }).chain(rest));
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"audit.csv\"",
            ),
        ],
        body,
    )
        .into_response())
}

/// Events an export reads at a time: about 1 KiB each in memory, and as
/// much again as CSV.
const EXPORT_PAGE: u32 = 500;

/// Where an export's walk through the matching events stands.
struct ExportWalk {
    db: Db,
    org_id: String,
    filter: Filter,
    /// The id of the last event written; the next page is older.
    before: Option<String>,
    done: bool,
}

impl ExportWalk {
    /// The next page as CSV rows; None once every match is written.
    async fn next_page(&mut self) -> Result<Option<Vec<u8>>, ApiError> {
        if self.done {
            return Ok(None);
        }
        let rows = events::page(
            &self.db,
            &self.org_id,
            &self.filter,
            self.before.as_deref(),
            EXPORT_PAGE,
        )
        .await?;
        self.done = rows.len() < EXPORT_PAGE as usize;
        match rows.last() {
            Some(last) => self.before = Some(last.id.clone()),
            None => return Ok(None),
        }
        to_csv(rows).map(Some).map_err(internal)
    }
}

fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError::Internal(e.to_string())
}

const CSV_HEADER: [&str; 13] = [
    "id",
    "createdAt",
    "type",
    "category",
    "action",
    "actorType",
    "actorId",
    "actorUserId",
    "actorIp",
    "resourceType",
    "resourceId",
    "resourceName",
    "data",
];

fn csv_writer() -> csv::Writer<Vec<u8>> {
    csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .quote_style(csv::QuoteStyle::Necessary)
        .from_writer(Vec::new())
}

/// CSV rows of `rows`, without the header.
fn to_csv(rows: Vec<Event>) -> Result<Vec<u8>, csv::Error> {
    let mut out = csv_writer();
    for e in rows {
        let opt = |v: Option<String>| v.unwrap_or_default();
        let resource_name = serde_json::from_str::<serde_json::Value>(&e.data)
            .ok()
            .and_then(|d| d["name"].as_str().map(str::to_owned))
            .unwrap_or_default();
        let record = [
            e.id,
            time::to_rfc3339(e.created_at),
            e.kind,
            e.category,
            e.action,
            e.actor_type,
            opt(e.actor_id),
            opt(e.actor_user_id),
            opt(e.actor_ip),
            opt(e.resource_type),
            opt(e.resource_id),
            resource_name,
            e.data,
        ];
        out.write_record(record.iter().map(|cell| defuse(cell)))?;
    }
    out.into_inner().map_err(|e| e.into_error().into())
}

/// Prefixes a cell that starts like a formula with `'` (OWASP ASVS 1.2.10).
pub fn defuse(cell: &str) -> String {
    match cell.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r' | '\0') => format!("'{cell}"),
        _ => cell.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn formula_cells_are_defused() {
        for (cell, want) in [
            ("=1+1", "'=1+1"),
            ("+1", "'+1"),
            ("-1", "'-1"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("\tx", "'\tx"),
            ("\rx", "'\rx"),
            ("plain", "plain"),
            ("", ""),
        ] {
            assert_eq!(super::defuse(cell), want);
        }
    }
}
