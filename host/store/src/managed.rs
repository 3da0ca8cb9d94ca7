//! What the managed services (caches, databases) keep alike: the state a
//! host's reconciler reads and drives. The API writes what the user asked
//! for (the settings columns of each service's own module) and bumps
//! `generation`; the reconciler records what it observed (`status`, with
//! `status_detail` the reason of a failure) and where the provider placed
//! the resource (`placement`, empty until it is placed). Every change of
//! status records its event in the same transaction.

use sqlx::FromRow;

use crate::events::{self, NewEvent};
use crate::{Db, Result, Tx};

/// The table of one kind of managed resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    Caches,
    Databases,
    /// Apps' volumes (`app_volumes`).
    Volumes,
}

impl Table {
    fn name(self) -> &'static str {
        match self {
            Table::Caches => "caches",
            Table::Databases => "databases",
            Table::Volumes => "app_volumes",
        }
    }
}

/// The state of one resource, as its reconciler reads it.
#[derive(Clone, Debug, FromRow)]
pub struct State {
    pub id: String,
    pub org_id: String,
    pub status: String,
    pub status_detail: Option<String>,
    /// Bumped by every change the user asks for.
    pub generation: i64,
    pub replicas: i64,
    /// The provider's JSON; empty until the resource is placed.
    pub placement: String,
}

const STATE: &str = "id, org_id, status, status_detail, generation, replicas, placement";

/// Every resource of `table` that `host_id` runs, for its supervisor.
pub async fn list_on_host(db: &Db, table: Table, host_id: &str) -> Result<Vec<State>> {
    let sql = format!(
        "SELECT {STATE} FROM {} WHERE host_id = $1 ORDER BY id",
        table.name()
    );
    Ok(sqlx::query_as(&sql)
        .bind(host_id)
        .fetch_all(db.pool())
        .await?)
}

/// The state of resource `id`.
pub async fn state(db: &Db, table: Table, id: &str) -> Result<Option<State>> {
    let sql = format!("SELECT {STATE} FROM {} WHERE id = $1", table.name());
    Ok(sqlx::query_as(&sql)
        .bind(id)
        .fetch_optional(db.pool())
        .await?)
}

/// Keeps where the provider placed resource `id` now (after it applied a
/// spec, failed over, or rebuilt a member).
pub async fn set_placement(tx: &mut Tx, table: Table, id: &str, placement: &str) -> Result<()> {
    let sql = format!("UPDATE {} SET placement = $1 WHERE id = $2", table.name());
    sqlx::query(&sql)
        .bind(placement)
        .bind(id)
        .execute(tx.conn())
        .await?;
    Ok(())
}

/// A change of status the reconciler observed.
#[derive(Clone, Copy, Debug)]
pub struct Transition<'a> {
    pub from: &'a str,
    pub to: &'a str,
    /// Why, for a failure.
    pub detail: Option<&'a str>,
    /// The generation the reconciler applied, when it applied one.
    pub generation: Option<i64>,
}

/// Moves resource `id` as `change` says, only if it still is in
/// `change.from` (and, with a generation, still asks for that one: a
/// change asked for meanwhile is applied next), and records `event` with
/// it. Whether it moved.
pub async fn transition(
    tx: &mut Tx,
    table: Table,
    id: &str,
    change: Transition<'_>,
    event: &NewEvent,
    now: i64,
) -> Result<bool> {
    let Transition {
        from,
        to,
        detail,
        generation,
    } = change;
    let mut sql = format!(
        "UPDATE {} SET status = $1, status_detail = $2, updated_at = $3 \
         WHERE id = $4 AND status = $5",
        table.name()
    );
    if generation.is_some() {
        sql.push_str(" AND generation = $6");
    }
    let mut query = sqlx::query(&sql)
        .bind(to)
        .bind(detail)
        .bind(now)
        .bind(id)
        .bind(from);
    if let Some(generation) = generation {
        query = query.bind(generation);
    }
    let moved = query.execute(tx.conn()).await?.rows_affected() > 0;
    if moved && from != to {
        events::record(tx, event, now).await?;
    }
    Ok(moved)
}

/// Records that the user asked for a change of resource `id` of
/// `org_id` (the caller writes the change and its event in `tx`): a new
/// generation in status `status` (`updating`, `deleting`). Whether the
/// resource exists.
pub async fn request(
    tx: &mut Tx,
    table: Table,
    org_id: &str,
    id: &str,
    status: &str,
    now: i64,
) -> Result<bool> {
    let sql = format!(
        "UPDATE {} SET status = $1, status_detail = NULL, generation = generation + 1, \
         updated_at = $2 WHERE org_id = $3 AND id = $4",
        table.name()
    );
    Ok(sqlx::query(&sql)
        .bind(status)
        .bind(now)
        .bind(org_id)
        .bind(id)
        .execute(tx.conn())
        .await?
        .rows_affected()
        > 0)
}

/// Removes resource `id`'s row once its provider has removed everything
/// it made, with `event`.
pub async fn remove(tx: &mut Tx, table: Table, id: &str, event: &NewEvent, now: i64) -> Result<()> {
    let sql = format!("DELETE FROM {} WHERE id = $1", table.name());
    sqlx::query(&sql).bind(id).execute(tx.conn()).await?;
    events::record(tx, event, now).await?;
    Ok(())
}
