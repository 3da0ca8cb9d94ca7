//! Redemptions of a balance: credit, which lowers the organisation's
//! invoices from the month it was redeemed in, and gift cards, which
//! wait for the operator to fulfil (or cancel) them.

use sqlx::FromRow;

use crate::{Db, Result, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct Redemption {
    pub id: String,
    pub org_id: String,
    /// credit or giftcard.
    pub kind: String,
    pub amount_cents: i64,
    /// applied (credit), pending, fulfilled or cancelled (gift cards).
    pub status: String,
    /// The month (`YYYY-MM`) it was made in.
    pub period: String,
    pub note: Option<String>,
    pub created_at: i64,
    pub settled_at: Option<i64>,
}

const COLUMNS: &str =
    "id, org_id, kind, amount_cents, status, period, note, created_at, settled_at";

pub async fn insert(tx: &mut Tx, r: &Redemption) -> Result<()> {
    sqlx::query(
        "INSERT INTO reward_redemptions (id, org_id, kind, amount_cents, status, period, note, \
         created_at, settled_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(&r.id)
    .bind(&r.org_id)
    .bind(&r.kind)
    .bind(r.amount_cents)
    .bind(&r.status)
    .bind(&r.period)
    .bind(r.note.as_deref())
    .bind(r.created_at)
    .bind(r.settled_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// A redemption of any organisation (the operator's fulfilment).
pub async fn get(db: &Db, id: &str) -> Result<Option<Redemption>> {
    let sql = format!("SELECT {COLUMNS} FROM reward_redemptions WHERE id = $1");
    Ok(sqlx::query_as(&sql)
        .bind(id)
        .fetch_optional(db.pool())
        .await?)
}

/// Settles a pending gift card as `status` (fulfilled or cancelled);
/// false when it is no longer pending.
pub async fn settle(
    tx: &mut Tx,
    id: &str,
    status: &str,
    note: Option<&str>,
    now: i64,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE reward_redemptions SET status = $2, note = $3, settled_at = $4 \
         WHERE id = $1 AND status = 'pending'",
    )
    .bind(id)
    .bind(status)
    .bind(note)
    .bind(now)
    .execute(tx.conn())
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The organisation's latest redemptions, newest first.
pub async fn of_org(db: &Db, org_id: &str, limit: i64) -> Result<Vec<Redemption>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM reward_redemptions WHERE org_id = $1 ORDER BY id DESC LIMIT $2"
    );
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(limit)
        .fetch_all(db.pool())
        .await?)
}

/// Redemptions of every organisation (`status`: only those), newest
/// first: the gift cards the operator has to fulfil.
pub async fn all(db: &Db, status: Option<&str>, limit: i64) -> Result<Vec<Redemption>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM reward_redemptions WHERE kind = 'giftcard' \
         AND ($1 = '' OR status = $1) ORDER BY id DESC LIMIT $2"
    );
    Ok(sqlx::query_as(&sql)
        .bind(status.unwrap_or(""))
        .bind(limit)
        .fetch_all(db.pool())
        .await?)
}

/// The credit the organisation redeemed per month, oldest first.
pub async fn credit_by_period(db: &Db, org_id: &str) -> Result<Vec<(String, i64)>> {
    Ok(sqlx::query_as(
        "SELECT period, CAST(SUM(amount_cents) AS BIGINT) FROM reward_redemptions \
         WHERE org_id = $1 AND kind = 'credit' GROUP BY period ORDER BY period",
    )
    .bind(org_id)
    .fetch_all(db.pool())
    .await?)
}

/// What the organisation redeemed and did not get back (every credit and
/// every gift card not cancelled), in cents.
pub async fn redeemed_cents(db: &Db, org_id: &str) -> Result<i64> {
    let (n,): (i64,) = sqlx::query_as(
        "SELECT CAST(COALESCE(SUM(amount_cents), 0) AS BIGINT) FROM reward_redemptions \
         WHERE org_id = $1 AND status <> 'cancelled'",
    )
    .bind(org_id)
    .fetch_one(db.pool())
    .await?;
    Ok(n)
}
