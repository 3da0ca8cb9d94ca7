//! Source uploads: an archive an app's deployment builds, bound to one
//! app of one organisation, stored once before it expires, built once.

use sqlx::FromRow;

use crate::{Db, Result, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct Upload {
    pub id: String,
    pub app_id: String,
    pub org_id: String,
    /// When the archive was stored; none while it is awaited.
    pub stored_at: Option<i64>,
    pub bytes: Option<i64>,
    pub expires_at: i64,
    pub created_at: i64,
}

const COLUMNS: &str = "id, app_id, org_id, stored_at, bytes, expires_at, created_at";

pub async fn insert(tx: &mut Tx, u: &Upload) -> Result<()> {
    sqlx::query(
        "INSERT INTO app_uploads (id, app_id, org_id, stored_at, bytes, expires_at, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(&u.id)
    .bind(&u.app_id)
    .bind(&u.org_id)
    .bind(u.stored_at)
    .bind(u.bytes)
    .bind(u.expires_at)
    .bind(u.created_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// The upload `id` of the organisation's app `app_id`.
pub async fn get_in(tx: &mut Tx, org_id: &str, app_id: &str, id: &str) -> Result<Option<Upload>> {
    let sql =
        format!("SELECT {COLUMNS} FROM app_uploads WHERE org_id = $1 AND app_id = $2 AND id = $3");
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(app_id)
        .bind(id)
        .fetch_optional(tx.conn())
        .await?)
}

/// The upload `id` of app `app_id`, for the signed upload itself.
pub async fn get(db: &Db, app_id: &str, id: &str) -> Result<Option<Upload>> {
    let sql = format!("SELECT {COLUMNS} FROM app_uploads WHERE app_id = $1 AND id = $2");
    Ok(sqlx::query_as(&sql)
        .bind(app_id)
        .bind(id)
        .fetch_optional(db.pool())
        .await?)
}

/// Records the stored archive; false when another request stored one first.
pub async fn set_stored(tx: &mut Tx, id: &str, bytes: i64, now: i64) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE app_uploads SET stored_at = $1, bytes = $2 WHERE id = $3 AND stored_at IS NULL",
    )
    .bind(now)
    .bind(bytes)
    .bind(id)
    .execute(tx.conn())
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Whether a deployment already builds (or built) upload `id`.
pub async fn used(tx: &mut Tx, id: &str) -> Result<bool> {
    let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM app_deployments WHERE upload_id = $1")
        .bind(id)
        .fetch_one(tx.conn())
        .await?;
    Ok(n > 0)
}

/// Makes later deployments of app `id` build uploads.
pub async fn set_app_source(tx: &mut Tx, app_id: &str, now: i64) -> Result<()> {
    sqlx::query("UPDATE apps SET source_type = 'upload', updated_at = $1 WHERE id = $2")
        .bind(now)
        .bind(app_id)
        .execute(tx.conn())
        .await?;
    Ok(())
}

/// Removes the uploads nobody can build any more and no deployment names:
/// those never stored whose URL expired before `now`, and those stored
/// before `stored_before` and never deployed. Their ids, whose archives
/// the caller removes.
pub async fn sweep(db: &Db, now: i64, stored_before: i64) -> Result<Vec<String>> {
    let ids: Vec<(String,)> = sqlx::query_as(
        "DELETE FROM app_uploads WHERE \
         ((stored_at IS NULL AND expires_at < $1) OR stored_at < $2) \
         AND NOT EXISTS (SELECT 1 FROM app_deployments d WHERE d.upload_id = app_uploads.id) \
         RETURNING id",
    )
    .bind(now)
    .bind(stored_before)
    .fetch_all(&mut *db.writer().await?)
    .await?;
    Ok(ids.into_iter().map(|(id,)| id).collect())
}
