//! Edge-filter components (the operator's and each organisation's own)
//! and the filters each app runs, in order: rows the API writes and the
//! agent reads to build the edge's chains.

use sqlx::FromRow;

use crate::{Db, Result, Tx};

/// A stored edge-filter component, without its bytes.
#[derive(Clone, Debug, FromRow)]
pub struct FilterRow {
    pub id: String,
    /// None: the operator's, which every organisation may enable.
    pub org_id: Option<String>,
    pub name: String,
    pub version: String,
    pub digest: String,
    /// 1 when the filter asked for the response phase.
    pub response_phase: i64,
    pub created_at: i64,
}

const COLUMNS: &str = "id, org_id, name, version, digest, response_phase, created_at";

/// The most filters one app runs.
pub const MAX_APP_FILTERS: usize = 10;

pub async fn insert(tx: &mut Tx, r: &FilterRow, wasm: &[u8]) -> Result<()> {
    sqlx::query(&format!(
        "INSERT INTO edge_filters ({COLUMNS}, wasm) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
    ))
    .bind(&r.id)
    .bind(&r.org_id)
    .bind(&r.name)
    .bind(&r.version)
    .bind(&r.digest)
    .bind(r.response_phase)
    .bind(r.created_at)
    .bind(wasm)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// The filters `org_id` may enable: the operator's and its own, oldest
/// first; with `None`, the operator's only.
pub async fn visible(db: &Db, org_id: Option<&str>) -> Result<Vec<FilterRow>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM edge_filters WHERE org_id IS NULL OR org_id = $1 ORDER BY id"
    ))
    .bind(org_id.unwrap_or(""))
    .fetch_all(db.pool())
    .await?)
}

/// Filter `id`, if `org_id` may enable it.
pub async fn get_visible_in(tx: &mut Tx, org_id: &str, id: &str) -> Result<Option<FilterRow>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM edge_filters WHERE id = $1 AND (org_id IS NULL OR org_id = $2)"
    ))
    .bind(id)
    .bind(org_id)
    .fetch_optional(tx.conn())
    .await?)
}

/// A filter's component.
pub async fn wasm(db: &Db, id: &str) -> Result<Option<Vec<u8>>> {
    let row: Option<(Vec<u8>,)> = sqlx::query_as("SELECT wasm FROM edge_filters WHERE id = $1")
        .bind(id)
        .fetch_optional(db.pool())
        .await?;
    Ok(row.map(|(w,)| w))
}

/// One filter an app runs.
#[derive(Clone, Debug, FromRow)]
pub struct AppFilter {
    pub position: i64,
    pub filter_id: String,
    /// `open` or `closed`.
    pub fail_mode: String,
    pub name: String,
    pub version: String,
    pub digest: String,
    pub response_phase: i64,
    pub updated_at: i64,
}

/// The app's filters, in the order the edge runs them.
pub async fn of_app(db: &Db, app_id: &str) -> Result<Vec<AppFilter>> {
    Ok(sqlx::query_as(
        "SELECT a.position, a.filter_id, a.fail_mode, f.name, f.version, f.digest, \
         f.response_phase, a.updated_at FROM app_filters a \
         JOIN edge_filters f ON f.id = a.filter_id WHERE a.app_id = $1 ORDER BY a.position",
    )
    .bind(app_id)
    .fetch_all(db.pool())
    .await?)
}

/// Replaces the app's filters with `filters` (filter id, fail mode), in
/// that order.
pub async fn set_of_app(
    tx: &mut Tx,
    app_id: &str,
    filters: &[(String, String)],
    now: i64,
) -> Result<()> {
    sqlx::query("DELETE FROM app_filters WHERE app_id = $1")
        .bind(app_id)
        .execute(tx.conn())
        .await?;
    for (position, (filter_id, fail_mode)) in filters.iter().enumerate() {
        sqlx::query(
            "INSERT INTO app_filters (app_id, position, filter_id, fail_mode, updated_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(app_id)
        .bind(position as i64)
        .bind(filter_id)
        .bind(fail_mode)
        .bind(now)
        .execute(tx.conn())
        .await?;
    }
    Ok(())
}
