//! Volumes moving with their app to another runner (`app_volume_moves`).
//! The source runner records a move once it has stored a snapshot of the
//! volume, handing the volume's row to the target in the same transaction
//! (`creating` there, restored from the snapshot); the move ends with the
//! migration: on the switch its row goes (the source then removes its
//! image), on a failure the volume goes back to the source as it was.

use sqlx::FromRow;

use crate::{Db, Result, Tx};

#[derive(Clone, Debug, PartialEq, Eq, FromRow)]
pub struct Move {
    pub volume_id: String,
    pub app_id: String,
    pub from_host_id: String,
    pub to_host_id: String,
    /// The volume's placement on the source (its image and mount point).
    pub from_placement: String,
    /// The snapshot in the volume backup store.
    pub object_key: String,
    pub size_bytes: i64,
    pub created_at: i64,
}

const COLUMNS: &str = "volume_id, app_id, from_host_id, to_host_id, from_placement, \
    object_key, size_bytes, created_at";

/// Records `m` and hands its volume to `m.to_host_id`, to be made there
/// from the snapshot; false when the volume is no longer on the source
/// (or is being deleted).
pub async fn record(tx: &mut Tx, m: &Move) -> Result<bool> {
    let handed = sqlx::query(
        "UPDATE app_volumes SET host_id = $2, placement = '', status = 'creating', \
         status_detail = NULL, generation = generation + 1, updated_at = $4 \
         WHERE id = $1 AND host_id = $3 AND status <> 'deleting'",
    )
    .bind(&m.volume_id)
    .bind(&m.to_host_id)
    .bind(&m.from_host_id)
    .bind(m.created_at)
    .execute(tx.conn())
    .await?;
    if handed.rows_affected() != 1 {
        return Ok(false);
    }
    let sql =
        format!("INSERT INTO app_volume_moves ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)");
    sqlx::query(&sql)
        .bind(&m.volume_id)
        .bind(&m.app_id)
        .bind(&m.from_host_id)
        .bind(&m.to_host_id)
        .bind(&m.from_placement)
        .bind(&m.object_key)
        .bind(m.size_bytes)
        .bind(m.created_at)
        .execute(tx.conn())
        .await?;
    Ok(true)
}

/// The moves of app `app_id` under way.
pub async fn of_app(db: &Db, app_id: &str) -> Result<Vec<Move>> {
    let sql =
        format!("SELECT {COLUMNS} FROM app_volume_moves WHERE app_id = $1 ORDER BY volume_id");
    Ok(sqlx::query_as(&sql)
        .bind(app_id)
        .fetch_all(db.pool())
        .await?)
}

/// The move of volume `volume_id` under way, if any.
pub async fn of_volume(db: &Db, volume_id: &str) -> Result<Option<Move>> {
    let sql = format!("SELECT {COLUMNS} FROM app_volume_moves WHERE volume_id = $1");
    Ok(sqlx::query_as(&sql)
        .bind(volume_id)
        .fetch_optional(db.pool())
        .await?)
}

async fn take(tx: &mut Tx, app_id: &str) -> Result<Vec<Move>> {
    let sql =
        format!("SELECT {COLUMNS} FROM app_volume_moves WHERE app_id = $1 ORDER BY volume_id");
    let moves: Vec<Move> = sqlx::query_as(&sql)
        .bind(app_id)
        .fetch_all(tx.conn())
        .await?;
    sqlx::query("DELETE FROM app_volume_moves WHERE app_id = $1")
        .bind(app_id)
        .execute(tx.conn())
        .await?;
    Ok(moves)
}

/// Ends the moves of app `app_id` at its switch: the volumes stay where
/// they went. The moves ended (their snapshots can go).
pub async fn finish(tx: &mut Tx, app_id: &str) -> Result<Vec<Move>> {
    take(tx, app_id).await
}

/// Ends the moves of app `app_id` whose migration failed: each volume
/// goes back to its source, placed as it was there (its image never left
/// it), and is applied again there. The moves ended.
pub async fn roll_back(tx: &mut Tx, app_id: &str, now: i64) -> Result<Vec<Move>> {
    let moves = take(tx, app_id).await?;
    for m in &moves {
        sqlx::query(
            "UPDATE app_volumes SET host_id = $2, placement = $3, status = 'creating', \
             status_detail = NULL, generation = generation + 1, updated_at = $4 \
             WHERE id = $1 AND status <> 'deleting'",
        )
        .bind(&m.volume_id)
        .bind(&m.from_host_id)
        .bind(&m.from_placement)
        .bind(now)
        .execute(tx.conn())
        .await?;
    }
    Ok(moves)
}

/// Which host holds volume `volume_id` and whether a move of it is under
/// way, read in one statement; `None` when the volume is gone.
pub async fn holder(db: &Db, volume_id: &str) -> Result<Option<(String, bool)>> {
    let row: Option<(String, Option<String>)> = sqlx::query_as(
        "SELECT v.host_id, m.volume_id FROM app_volumes v \
         LEFT JOIN app_volume_moves m ON m.volume_id = v.id WHERE v.id = $1",
    )
    .bind(volume_id)
    .fetch_optional(db.pool())
    .await?;
    Ok(row.map(|(host, moving)| (host, moving.is_some())))
}
