//! Plugins' layers of apps' environments: one plugin's variables of one
//! app, names in the clear and values sealed by the host, replaced whole
//! under a revision that only grows.

use sqlx::FromRow;

use crate::{Db, Result, Tx};

/// A layer's head: whose it is, how new, and what set it.
#[derive(Clone, Debug, FromRow)]
pub struct LayerHead {
    pub plugin: String,
    pub revision: i64,
    pub source: String,
    pub updated_at: i64,
}

/// One variable of a layer.
#[derive(Clone, Debug, FromRow)]
pub struct LayerVar {
    pub plugin: String,
    pub name: String,
    pub sealed: Vec<u8>,
}

/// The head of `plugin`'s layer of `app_id`, read in the transaction
/// that replaces it (on PostgreSQL, locked until it commits).
pub async fn head_in(tx: &mut Tx, app_id: &str, plugin: &str) -> Result<Option<LayerHead>> {
    let lock = if tx.is_sqlite() { "" } else { " FOR UPDATE" };
    let sql = format!(
        "SELECT plugin, revision, source, updated_at FROM app_plugin_layers \
         WHERE app_id = $1 AND plugin = $2{lock}"
    );
    Ok(sqlx::query_as(&sql)
        .bind(app_id)
        .bind(plugin)
        .fetch_optional(tx.conn())
        .await?)
}

/// The variables of `plugin`'s layer of `app_id`, by name.
pub async fn vars_in(tx: &mut Tx, app_id: &str, plugin: &str) -> Result<Vec<LayerVar>> {
    Ok(sqlx::query_as(
        "SELECT plugin, name, sealed FROM app_plugin_env WHERE app_id = $1 AND plugin = $2 ORDER BY name",
    )
    .bind(app_id)
    .bind(plugin)
    .fetch_all(tx.conn())
    .await?)
}

/// Replaces `plugin`'s layer of `app_id` with `vars` (sealed), at
/// `revision`.
pub async fn replace(
    tx: &mut Tx,
    app_id: &str,
    head: &LayerHead,
    vars: &[(String, Vec<u8>)],
) -> Result<()> {
    sqlx::query("DELETE FROM app_plugin_env WHERE app_id = $1 AND plugin = $2")
        .bind(app_id)
        .bind(&head.plugin)
        .execute(tx.conn())
        .await?;
    for (name, sealed) in vars {
        sqlx::query(
            "INSERT INTO app_plugin_env (app_id, plugin, name, sealed) VALUES ($1, $2, $3, $4)",
        )
        .bind(app_id)
        .bind(&head.plugin)
        .bind(name)
        .bind(sealed)
        .execute(tx.conn())
        .await?;
    }
    sqlx::query("DELETE FROM app_plugin_layers WHERE app_id = $1 AND plugin = $2")
        .bind(app_id)
        .bind(&head.plugin)
        .execute(tx.conn())
        .await?;
    sqlx::query(
        "INSERT INTO app_plugin_layers (app_id, plugin, revision, source, updated_at) \
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(app_id)
    .bind(&head.plugin)
    .bind(head.revision)
    .bind(&head.source)
    .bind(head.updated_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// Every plugin's variables of `app_id`, by plugin then name.
pub async fn list(db: &Db, app_id: &str) -> Result<Vec<LayerVar>> {
    Ok(sqlx::query_as(
        "SELECT plugin, name, sealed FROM app_plugin_env WHERE app_id = $1 ORDER BY plugin, name",
    )
    .bind(app_id)
    .fetch_all(db.pool())
    .await?)
}
