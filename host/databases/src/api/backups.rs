//! Backups and point-in-time restore (issue 32): the ledger of a
//! database (also of one deleted within its retention), an on-demand
//! backup (taken by the agent, like the scheduled ones), and a restore,
//! which always makes a new cluster from the nearest base backup before
//! the target plus the archived WAL up to it.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plateau_api::AppState;
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::{Body, Validator};
use plateau_core::time;
use plateau_store::databases::backups::{self, Backup, Restore};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::clusters::{NewCluster, insert_new};
use super::{DatabaseView, Service, find};
use crate::backups::{Source, asked};
use crate::service::DatabaseService;

/// One entry of a database's backup ledger.
#[derive(Serialize, ToSchema)]
#[schema(as = DatabaseBackup)]
#[serde(rename_all = "camelCase")]
pub struct BackupView {
    pub id: String,
    /// `full` (a base backup) or `incremental` (the WAL archived since the
    /// entry before, closed and shipped).
    pub kind: String,
    /// `pending`, `running`, `completed` or `failed`.
    pub status: String,
    /// Why it failed.
    pub detail: Option<String>,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    pub size_bytes: i64,
    /// The first and the last WAL segment it covers.
    pub wal_start: Option<String>,
    pub wal_end: Option<String>,
    pub created_at: String,
    /// When it is removed, for a deleted database's backups.
    pub expires_at: Option<String>,
}

impl From<Backup> for BackupView {
    fn from(b: Backup) -> Self {
        BackupView {
            id: b.id,
            kind: b.kind,
            status: b.status,
            detail: b.detail,
            started_at: b.started_at.map(time::to_rfc3339),
            ended_at: b.ended_at.map(time::to_rfc3339),
            size_bytes: b.size_bytes,
            wal_start: b.wal_start,
            wal_end: b.wal_end,
            created_at: time::to_rfc3339(b.created_at),
            expires_at: b.expires_at.map(time::to_rfc3339),
        }
    }
}

/// The ledger of database `id`, live or deleted within its retention.
async fn ledger(app: &AppState, caller: &Caller, id: &str) -> Result<Vec<Backup>, ApiError> {
    let rows = backups::list(app.db(), &caller.org_id, id).await?;
    if rows.is_empty() {
        find(app, caller, id).await?;
    }
    Ok(rows)
}

/// The backup ledger: base backups and archived stretches of WAL, oldest
/// first. A deleted database's stay listed (and restorable) for its
/// `backupRetentionDays`.
#[utoipa::path(get, path = "/databases/{id}/backups", tag = "databases",
    security(("bearer" = ["databases:read"])),
    params(("id" = String, Path, description = "database id")),
    responses((status = 200, description = "the ledger", body = Vec<BackupView>)))]
pub async fn list(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Vec<BackupView>>, ApiError> {
    let rows = ledger(&app, &caller, &id).await?;
    Ok(Json(rows.into_iter().map(BackupView::from).collect()))
}

#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TakeBackup {
    /// A base backup (true, the default), or the WAL since the last entry
    /// closed and shipped at once (false).
    pub full: Option<bool>,
}

/// Take a backup now. The answer comes first, with the entry `pending`;
/// the host takes it and the ledger shows it `completed` (or `failed`).
#[utoipa::path(post, path = "/databases/{id}/backups", tag = "databases",
    security(("bearer" = ["databases:write"])),
    params(("id" = String, Path, description = "database id")),
    request_body = Option<TakeBackup>,
    responses((status = 202, description = "the backup, `pending`", body = BackupView),
              (status = 409, description = "not ready: the database does not run", body = plateau_api::error::Problem)))]
pub async fn take(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<TakeBackup>,
) -> Result<(StatusCode, Json<BackupView>), ApiError> {
    let d = find(&app, &caller, &id).await?;
    if !matches!(d.status.as_str(), "running" | "degraded") {
        return Err(ApiError::conflict(
            "not_ready",
            format!(
                "database {id} is {}; wait until its status is running",
                d.status
            ),
        ));
    }
    let placement = DatabaseService::placement(&d)?;
    let kind = if input.full.unwrap_or(true) {
        "full"
    } else {
        "incremental"
    };
    let b = asked(&d, &placement, kind);
    backups::insert(app.db(), &b).await?;
    Ok((StatusCode::ACCEPTED, Json(b.into())))
}

#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RestoreDatabase {
    /// The new database's name; `<name>-restore-<time>` by default.
    #[schema(schema_with = plateau_api::openapi::optional_name_schema)]
    pub name: Option<String>,
    /// The time (RFC 3339) to restore to, between the end of the first
    /// completed base backup and now; the latest archived WAL by default.
    pub target_time: Option<String>,
}

/// Restore into a NEW database: the nearest base backup before the target
/// plus the archived WAL up to it, then promoted. The answer comes first,
/// with the new database `creating`. The source may have been deleted, as
/// long as its backups are kept.
#[utoipa::path(post, path = "/databases/{id}/restore", tag = "databases",
    security(("bearer" = ["databases:write"])),
    params(("id" = String, Path, description = "database id")),
    request_body = Option<RestoreDatabase>,
    responses((status = 201, description = "the new database, `creating`", body = DatabaseView),
              (status = 400, description = "targetTime is not a time, in the future, or before the first backup", body = plateau_api::error::Problem),
              (status = 409, description = "no backup is completed yet, the name is taken, or a plan limit is reached", body = plateau_api::error::Problem)))]
pub async fn restore(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<RestoreDatabase>,
) -> Result<(StatusCode, Json<DatabaseView>), ApiError> {
    let target = past_time(input.target_time.as_deref(), "targetTime")?;
    let now = time::now_ms();
    let base = nearest_backup(&app, &caller, &id, target, "targetTime").await?;
    let source = Source::read(&base.settings);
    let live = find(&app, &caller, &id).await.ok();
    let name = input.name.clone().unwrap_or_else(|| {
        format!(
            "{}-restore-{}",
            base.database_name,
            time::to_rfc3339(target.unwrap_or(now)).replace([':', '.'], "-")
        )
    });
    Validator::new().name("name", &name).finish()?;
    let new = NewCluster {
        name: name.trim().to_owned(),
        version: source.version.clone(),
        replicas: live.as_ref().map_or(0, |d| d.replicas),
        memory_mb: live
            .as_ref()
            .map_or(source.memory_mb, |d| d.memory_mb)
            .max(64),
        cpus: live.as_ref().map_or(source.cpus, |d| d.cpus).max(1),
        disk_gb: live.as_ref().map_or(source.disk_gb, |d| d.disk_gb).max(1),
        project_id: live.as_ref().and_then(|d| d.project_id.clone()),
    };
    let r = Restore {
        database_id: String::new(),
        org_id: caller.org_id.clone(),
        source_id: id.clone(),
        backup_id: base.id.clone(),
        target_time: target,
        created_at: now,
    };
    let d = insert_new(&app, &service, &caller, new, Some(r), None).await?;
    Ok((
        StatusCode::CREATED,
        Json(DatabaseView::of(&service, d).await?),
    ))
}

/// The nearest completed base backup of database `id` that ended before
/// `target` (now without one); a target before the first is refused
/// naming `field`.
pub(super) async fn nearest_backup(
    app: &AppState,
    caller: &Caller,
    id: &str,
    target: Option<i64>,
    field: &str,
) -> Result<Backup, ApiError> {
    let now = time::now_ms();
    let rows = ledger(app, caller, id).await?;
    let fulls: Vec<&Backup> = rows
        .iter()
        .filter(|b| {
            b.kind == "full" && b.status == "completed" && b.expires_at.is_none_or(|e| e > now)
        })
        .collect();
    let Some(first) = fulls.iter().filter_map(|b| b.ended_at).min() else {
        return Err(match target {
            Some(_) => ApiError::invalid(field, "the database has no completed backup yet"),
            None => ApiError::conflict(
                "no_backup",
                format!(
                    "database {id} has no completed backup yet; take one with POST /databases/{id}/backups"
                ),
            ),
        });
    };
    // The nearest base backup that ended before the target.
    let base = fulls
        .iter()
        .filter(|b| b.ended_at.is_some_and(|e| e <= target.unwrap_or(now)))
        .max_by_key(|b| b.ended_at)
        .ok_or_else(|| {
            ApiError::invalid(
                field,
                format!(
                    "must be after the first backup, which ended at {}",
                    time::to_rfc3339(first)
                ),
            )
        })?;
    Ok((*base).clone())
}

/// A time given as `field`: RFC 3339, not in the future.
pub(super) fn past_time(text: Option<&str>, field: &str) -> Result<Option<i64>, ApiError> {
    let Some(text) = text else {
        return Ok(None);
    };
    let at = time::parse_rfc3339(text)
        .ok_or_else(|| ApiError::invalid(field, "must be an RFC 3339 time"))?;
    if at > time::now_ms() {
        return Err(ApiError::invalid(field, "must not be in the future"));
    }
    Ok(Some(at))
}
