//! Rewards (`0046_rewards.sql`): the lines the operator configures, each
//! organisation's account (balance, referral code, clicks, sign-ups),
//! claims ([`claims`]: submissions and how the platform's records verify
//! them) and redemptions ([`redemptions`]).
//!
//! **Invariant:** an organisation's balance changes only in the
//! transaction that approves a submission or makes or cancels a
//! redemption, with its event; a redemption takes from the balance by a
//! conditional update, so concurrent ones never overdraw it. Every write
//! of an organisation's rewards first touches its account row
//! ([`lock_account`]), which serialises them on PostgreSQL as SQLite's one
//! writer does.

pub mod claims;
pub mod redemptions;

use plateau_core::rewards;
use sqlx::FromRow;

use crate::{Db, Result, Tx};

/// A line: which action pays, how much, and how a claim is verified.
#[derive(Clone, Debug, FromRow)]
pub struct Line {
    pub id: String,
    pub key: String,
    pub title: String,
    pub description: String,
    /// event, usage, resource or referral (`plateau_core::rewards::LineKind`).
    pub kind: String,
    pub event_type: Option<String>,
    pub resource_type: Option<String>,
    pub metric: Option<String>,
    pub threshold: Option<f64>,
    pub amount_cents: i64,
    pub requires_review: i64,
    pub max_claims: i64,
    pub enabled: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

const LINE_COLUMNS: &str = "id, key, title, description, kind, event_type, resource_type, \
                            metric, threshold, amount_cents, requires_review, max_claims, \
                            enabled, created_at, updated_at";

/// Adds a line; a duplicate key or a second referral line is a unique
/// violation (`Error::is_unique_violation`).
pub async fn insert_line(db: &Db, l: &Line) -> Result<()> {
    sqlx::query(
        "INSERT INTO reward_lines (id, key, title, description, kind, event_type, resource_type, \
         metric, threshold, amount_cents, requires_review, max_claims, enabled, created_at, \
         updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
    )
    .bind(&l.id)
    .bind(&l.key)
    .bind(&l.title)
    .bind(&l.description)
    .bind(&l.kind)
    .bind(l.event_type.as_deref())
    .bind(l.resource_type.as_deref())
    .bind(l.metric.as_deref())
    .bind(l.threshold)
    .bind(l.amount_cents)
    .bind(l.requires_review)
    .bind(l.max_claims)
    .bind(l.enabled)
    .bind(l.created_at)
    .bind(l.updated_at)
    .execute(&mut *db.writer().await?)
    .await?;
    Ok(())
}

/// Writes the fields the operator may change on a line (not its key,
/// kind or rule: claims already made name them).
pub async fn update_line(db: &Db, l: &Line) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE reward_lines SET title = $2, description = $3, amount_cents = $4, \
         requires_review = $5, max_claims = $6, enabled = $7, updated_at = $8 WHERE id = $1",
    )
    .bind(&l.id)
    .bind(&l.title)
    .bind(&l.description)
    .bind(l.amount_cents)
    .bind(l.requires_review)
    .bind(l.max_claims)
    .bind(l.enabled)
    .bind(l.updated_at)
    .execute(&mut *db.writer().await?)
    .await?;
    Ok(done.rows_affected() == 1)
}

pub async fn get_line(db: &Db, id: &str) -> Result<Option<Line>> {
    let sql = format!("SELECT {LINE_COLUMNS} FROM reward_lines WHERE id = $1");
    Ok(sqlx::query_as(&sql)
        .bind(id)
        .fetch_optional(db.pool())
        .await?)
}

/// The enabled line a claim's `reason` names.
pub async fn line_by_key(db: &Db, key: &str) -> Result<Option<Line>> {
    let sql = format!("SELECT {LINE_COLUMNS} FROM reward_lines WHERE key = $1 AND enabled = 1");
    Ok(sqlx::query_as(&sql)
        .bind(key)
        .fetch_optional(db.pool())
        .await?)
}

/// Every line (`enabled_only`: those that pay now), by key.
pub async fn lines(db: &Db, enabled_only: bool) -> Result<Vec<Line>> {
    let filter = if enabled_only {
        " WHERE enabled = 1"
    } else {
        ""
    };
    let sql = format!("SELECT {LINE_COLUMNS} FROM reward_lines{filter} ORDER BY key");
    Ok(sqlx::query_as(&sql).fetch_all(db.pool()).await?)
}

/// The enabled referral line, read in a transaction.
pub async fn referral_line(tx: &mut Tx) -> Result<Option<Line>> {
    let sql =
        format!("SELECT {LINE_COLUMNS} FROM reward_lines WHERE kind = 'referral' AND enabled = 1");
    Ok(sqlx::query_as(&sql).fetch_optional(tx.conn()).await?)
}

/// An organisation's account.
#[derive(Clone, Debug, FromRow)]
pub struct Account {
    pub org_id: String,
    pub referral_code: String,
    pub balance_cents: i64,
    pub clicks: i64,
    pub signups: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

const ACCOUNT_COLUMNS: &str =
    "org_id, referral_code, balance_cents, clicks, signups, created_at, updated_at";

/// The organisation's account, made on first use with a new referral
/// code.
pub async fn account(db: &Db, org_id: &str, now: i64) -> Result<Account> {
    let sql = format!("SELECT {ACCOUNT_COLUMNS} FROM reward_accounts WHERE org_id = $1");
    if let Some(found) = sqlx::query_as(&sql)
        .bind(org_id)
        .fetch_optional(db.pool())
        .await?
    {
        return Ok(found);
    }
    let mut tx = db.begin().await?;
    let made = lock_account(&mut tx, org_id, now).await?;
    tx.commit().await?;
    Ok(made)
}

/// Touches (or makes) the organisation's account in `tx`, which holds it
/// until the commit; answers it as it is.
pub async fn lock_account(tx: &mut Tx, org_id: &str, now: i64) -> Result<Account> {
    sqlx::query(
        "INSERT INTO reward_accounts (org_id, referral_code, created_at, updated_at) \
         VALUES ($1, $2, $3, $3) ON CONFLICT (org_id) DO UPDATE SET updated_at = $3",
    )
    .bind(org_id)
    .bind(rewards::referral_code())
    .bind(now)
    .execute(tx.conn())
    .await?;
    let sql = format!("SELECT {ACCOUNT_COLUMNS} FROM reward_accounts WHERE org_id = $1");
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .fetch_one(tx.conn())
        .await?)
}

/// Adds `cents` (negative to take) to the balance; a take larger than the
/// balance changes nothing and answers false.
pub async fn add_balance(tx: &mut Tx, org_id: &str, cents: i64, now: i64) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE reward_accounts SET balance_cents = balance_cents + $2, updated_at = $3 \
         WHERE org_id = $1 AND balance_cents + $2 >= 0",
    )
    .bind(org_id)
    .bind(cents)
    .bind(now)
    .execute(tx.conn())
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Counts a click on a referral link; false for an unknown code.
pub async fn click(db: &Db, code: &str) -> Result<bool> {
    let done =
        sqlx::query("UPDATE reward_accounts SET clicks = clicks + 1 WHERE referral_code = $1")
            .bind(code)
            .execute(&mut *db.writer().await?)
            .await?;
    Ok(done.rows_affected() == 1)
}

/// The organisation whose referral code is `code`, counting a sign-up
/// on its account, in the transaction that creates the new organisation.
pub async fn count_signup(tx: &mut Tx, code: &str, now: i64) -> Result<Option<String>> {
    let found: Option<(String,)> = sqlx::query_as(
        "UPDATE reward_accounts SET signups = signups + 1, updated_at = $2 \
         WHERE referral_code = $1 RETURNING org_id",
    )
    .bind(code)
    .bind(now)
    .fetch_optional(tx.conn())
    .await?;
    Ok(found.map(|(org,)| org))
}
