//! API tokens. Only the SHA-256 hash of a secret is stored, with a hint
//! (its last four characters) for masked lists.

use sqlx::FromRow;

use crate::query::{Bind, Conditions, Keyset, Listed, Order};
use crate::{Db, Result, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct Token {
    pub id: String,
    pub org_id: String,
    pub user_id: String,
    pub name: String,
    pub secret_hint: String,
    pub scopes: String,
    pub project_id: Option<String>,
    pub max_cost_cents: Option<i64>,
    pub spent_cents: i64,
    pub expires_at: Option<i64>,
    pub revoked_at: Option<i64>,
    pub parent_id: Option<String>,
    pub grant_id: Option<String>,
    pub purpose: Option<String>,
    pub created_at: i64,
}

const COLUMNS: &str = "id, org_id, user_id, name, secret_hint, scopes, project_id, max_cost_cents, \
                       spent_cents, expires_at, revoked_at, parent_id, grant_id, purpose, created_at";

/// A token found by its secret, with what authorization needs to know of
/// its user and organisation.
#[derive(Clone, Debug, FromRow)]
pub struct Authenticated {
    #[sqlx(flatten)]
    pub token: Token,
    pub role: String,
    pub org_name: String,
    pub plan: String,
    pub user_name: String,
    pub user_email: Option<String>,
}

pub async fn insert(tx: &mut Tx, token: &Token, secret_hash: &str) -> Result<()> {
    sqlx::query(
        "INSERT INTO tokens (id, org_id, user_id, name, secret_hash, secret_hint, scopes, project_id, \
         max_cost_cents, spent_cents, expires_at, revoked_at, parent_id, grant_id, purpose, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
    )
    .bind(&token.id)
    .bind(&token.org_id)
    .bind(&token.user_id)
    .bind(&token.name)
    .bind(secret_hash)
    .bind(&token.secret_hint)
    .bind(&token.scopes)
    .bind(&token.project_id)
    .bind(token.max_cost_cents)
    .bind(token.spent_cents)
    .bind(token.expires_at)
    .bind(token.revoked_at)
    .bind(&token.parent_id)
    .bind(&token.grant_id)
    .bind(&token.purpose)
    .bind(token.created_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// The token whose secret hashes to `secret_hash`, revoked and expired
/// ones included (the caller tells them apart), if its user still belongs
/// to the organisation.
pub async fn find_by_secret_hash(db: &Db, secret_hash: &str) -> Result<Option<Authenticated>> {
    let columns = COLUMNS
        .split(", ")
        .map(|c| format!("t.{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        "SELECT {columns}, m.role, o.name AS org_name, o.plan, u.name AS user_name, \
         u.email AS user_email FROM tokens t \
         JOIN memberships m ON m.org_id = t.org_id AND m.user_id = t.user_id \
         JOIN organizations o ON o.id = t.org_id \
         JOIN users u ON u.id = t.user_id \
         WHERE t.secret_hash = $1"
    );
    Ok(sqlx::query_as(&sql)
        .bind(secret_hash)
        .fetch_optional(db.pool())
        .await?)
}

/// Tokens of an organisation, oldest first; `user_id` narrows to one user's.
pub async fn list(
    db: &Db,
    org_id: &str,
    user_id: Option<&str>,
    keyset: &Keyset,
) -> Result<Listed<Token>> {
    let mut conds = Conditions::new();
    conds.push("org_id = ?", Bind::Text(org_id.to_owned()));
    if let Some(user_id) = user_id {
        conds.push("user_id = ?", Bind::Text(user_id.to_owned()));
    }
    crate::query::list(
        db.pool(),
        COLUMNS,
        "tokens",
        conds,
        keyset,
        "id",
        Order::Asc,
    )
    .await
}

pub async fn get(tx: &mut Tx, org_id: &str, id: &str) -> Result<Option<Token>> {
    let sql = format!("SELECT {COLUMNS} FROM tokens WHERE org_id = $1 AND id = $2");
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(id)
        .fetch_optional(tx.conn())
        .await?)
}

/// Marks a token revoked; false if it already was.
pub async fn revoke(tx: &mut Tx, org_id: &str, id: &str, now: i64) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE tokens SET revoked_at = $3 WHERE org_id = $1 AND id = $2 AND revoked_at IS NULL",
    )
    .bind(org_id)
    .bind(id)
    .bind(now)
    .execute(tx.conn())
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Tokens that can still authenticate.
pub async fn count_active(db: &Db, org_id: &str, now: i64) -> Result<i64> {
    let (n,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM tokens WHERE org_id = $1 AND revoked_at IS NULL \
         AND (expires_at IS NULL OR expires_at > $2)",
    )
    .bind(org_id)
    .bind(now)
    .fetch_one(db.pool())
    .await?;
    Ok(n)
}
