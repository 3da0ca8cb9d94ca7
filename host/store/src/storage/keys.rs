//! Access keys: per-organisation S3 credentials. The secret is stored
//! sealed (SigV4 verification needs it), never in the clear.

use sqlx::FromRow;

use crate::query::{Bind, Conditions, Keyset, Listed, Order};
use crate::{Db, Result, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct AccessKey {
    pub id: String,
    pub org_id: String,
    pub name: String,
    pub access_key_id: String,
    /// The secret sealed with the host's key, base64.
    pub secret_sealed: String,
    /// The secret's last four characters, for masked lists.
    pub secret_hint: String,
    pub read_only: i64,
    /// A JSON array of bucket ids, or None for every bucket.
    pub buckets: Option<String>,
    pub created_at: i64,
}

const COLUMNS: &str = "id, org_id, name, access_key_id, secret_sealed, secret_hint, read_only, \
                       buckets, created_at";

pub async fn insert(tx: &mut Tx, k: &AccessKey) -> Result<()> {
    sqlx::query(
        "INSERT INTO storage_keys (id, org_id, name, access_key_id, secret_sealed, secret_hint, \
         read_only, buckets, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(&k.id)
    .bind(&k.org_id)
    .bind(&k.name)
    .bind(&k.access_key_id)
    .bind(&k.secret_sealed)
    .bind(&k.secret_hint)
    .bind(k.read_only)
    .bind(&k.buckets)
    .bind(k.created_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// Keys of an organisation, oldest first.
pub async fn list(db: &Db, org_id: &str, keyset: &Keyset) -> Result<Listed<AccessKey>> {
    let mut conds = Conditions::new();
    conds.push("org_id = ?", Bind::Text(org_id.to_owned()));
    crate::query::list(
        db.pool(),
        COLUMNS,
        "storage_keys",
        conds,
        keyset,
        "id",
        Order::Asc,
    )
    .await
}

/// A key by its access key id, whatever its organisation.
pub async fn by_access_key_id(db: &Db, access_key_id: &str) -> Result<Option<AccessKey>> {
    let sql = format!("SELECT {COLUMNS} FROM storage_keys WHERE access_key_id = $1");
    Ok(sqlx::query_as(&sql)
        .bind(access_key_id)
        .fetch_optional(db.pool())
        .await?)
}

pub async fn get(tx: &mut Tx, org_id: &str, id: &str) -> Result<Option<AccessKey>> {
    let sql = format!("SELECT {COLUMNS} FROM storage_keys WHERE org_id = $1 AND id = $2");
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(id)
        .fetch_optional(tx.conn())
        .await?)
}

pub async fn delete(tx: &mut Tx, org_id: &str, id: &str) -> Result<bool> {
    let done = sqlx::query("DELETE FROM storage_keys WHERE org_id = $1 AND id = $2")
        .bind(org_id)
        .bind(id)
        .execute(tx.conn())
        .await?;
    Ok(done.rows_affected() == 1)
}
