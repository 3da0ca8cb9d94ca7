//! Custom domains of apps: who holds each domain (the primary key, so one
//! organisation's domain can never be attached by another), whether its
//! DNS records were seen, and its certificate, sealed by the host (the
//! store never sees a private key in the clear). Also the ACME accounts
//! the host's agents issue under, one per directory, sealed.

use sqlx::FromRow;

use crate::{Db, Result, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct Domain {
    pub domain: String,
    pub app_id: String,
    pub org_id: String,
    pub token: String,
    pub verified_at: Option<i64>,
    pub dns_detail: Option<String>,
    pub cert_expires_at: Option<i64>,
    pub cert_issued_at: Option<i64>,
    pub cert_error: Option<String>,
    pub cert_attempts: i64,
    pub cert_next_at: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str = "domain, app_id, org_id, token, verified_at, dns_detail, cert_expires_at, \
    cert_issued_at, cert_error, cert_attempts, cert_next_at, created_at, updated_at";

/// What an edge serves for one verified domain of a live app.
#[derive(Clone, Debug, FromRow)]
pub struct Served {
    pub domain: String,
    pub slug: String,
    pub cert_sealed: Option<Vec<u8>>,
    pub cert_issued_at: Option<i64>,
    pub challenge_token: Option<String>,
    pub challenge_answer: Option<String>,
}

pub async fn insert(tx: &mut Tx, d: &Domain) -> Result<()> {
    let sql = format!(
        "INSERT INTO app_domains ({COLUMNS}) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
    );
    sqlx::query(&sql)
        .bind(&d.domain)
        .bind(&d.app_id)
        .bind(&d.org_id)
        .bind(&d.token)
        .bind(d.verified_at)
        .bind(&d.dns_detail)
        .bind(d.cert_expires_at)
        .bind(d.cert_issued_at)
        .bind(&d.cert_error)
        .bind(d.cert_attempts)
        .bind(d.cert_next_at)
        .bind(d.created_at)
        .bind(d.updated_at)
        .execute(tx.conn())
        .await?;
    Ok(())
}

/// Whoever holds `domain`, in any organisation.
pub async fn holder_in(tx: &mut Tx, domain: &str) -> Result<Option<Domain>> {
    let sql = format!("SELECT {COLUMNS} FROM app_domains WHERE domain = $1");
    Ok(sqlx::query_as(&sql)
        .bind(domain)
        .fetch_optional(tx.conn())
        .await?)
}

/// The app's domains by name.
pub async fn list(db: &Db, app_id: &str) -> Result<Vec<Domain>> {
    let sql = format!("SELECT {COLUMNS} FROM app_domains WHERE app_id = $1 ORDER BY domain");
    Ok(sqlx::query_as(&sql)
        .bind(app_id)
        .fetch_all(db.pool())
        .await?)
}

/// Detaches `domain` from the app; false when the app had no such domain.
pub async fn delete(tx: &mut Tx, app_id: &str, domain: &str) -> Result<bool> {
    let done = sqlx::query("DELETE FROM app_domains WHERE app_id = $1 AND domain = $2")
        .bind(app_id)
        .bind(domain)
        .execute(tx.conn())
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Records a check of the DNS records: `verified_at` once seen (kept from
/// the first time), or what was missing. A domain newly verified is due
/// for a certificate at once.
pub async fn set_checked(
    tx: &mut Tx,
    domain: &str,
    verified_at: Option<i64>,
    detail: Option<&str>,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "UPDATE app_domains SET verified_at = COALESCE(verified_at, $2), dns_detail = $3, \
         cert_next_at = CASE WHEN verified_at IS NULL THEN 0 ELSE cert_next_at END, \
         updated_at = $4 WHERE domain = $1",
    )
    .bind(domain)
    .bind(verified_at)
    .bind(detail)
    .bind(now)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// Makes a verified domain whose issuance failed due again now (a user's
/// verify asks for another try).
pub async fn retry_now(tx: &mut Tx, domain: &str) -> Result<()> {
    sqlx::query(
        "UPDATE app_domains SET cert_next_at = 0 WHERE domain = $1 AND cert_error IS NOT NULL",
    )
    .bind(domain)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// Every verified domain of an app not in the trash, with its certificate
/// and the challenge of an issuance in progress.
pub async fn served(db: &Db) -> Result<Vec<Served>> {
    Ok(sqlx::query_as(
        "SELECT d.domain, a.slug, d.cert_sealed, d.cert_issued_at, d.challenge_token, \
         d.challenge_answer FROM app_domains d JOIN apps a ON a.id = d.app_id \
         WHERE d.verified_at IS NOT NULL AND a.deleted_at IS NULL ORDER BY d.domain",
    )
    .fetch_all(db.pool())
    .await?)
}

/// Verified domains without a certificate, or whose certificate expires
/// before `renew_by`, that are due and not held by an issuance.
pub async fn due(db: &Db, now: i64, renew_by: i64) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar(
        "SELECT d.domain FROM app_domains d JOIN apps a ON a.id = d.app_id \
         WHERE d.verified_at IS NOT NULL AND a.deleted_at IS NULL \
         AND (d.cert_expires_at IS NULL OR d.cert_expires_at < $2) \
         AND d.cert_next_at <= $1 AND d.cert_lease_until < $1 ORDER BY d.cert_next_at, d.domain",
    )
    .bind(now)
    .bind(renew_by)
    .fetch_all(db.pool())
    .await?)
}

/// Holds `domain` for an issuance until `until`; false when another
/// issuance holds it (on this host or another).
pub async fn claim(db: &Db, domain: &str, now: i64, until: i64) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE app_domains SET cert_lease_until = $3 WHERE domain = $1 AND cert_lease_until < $2",
    )
    .bind(domain)
    .bind(now)
    .bind(until)
    .execute(db.pool())
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Publishes (or, with `None`, withdraws) the HTTP-01 answer of an
/// issuance, for every edge serving the domain.
pub async fn set_challenge(db: &Db, domain: &str, challenge: Option<(&str, &str)>) -> Result<()> {
    sqlx::query(
        "UPDATE app_domains SET challenge_token = $2, challenge_answer = $3 WHERE domain = $1",
    )
    .bind(domain)
    .bind(challenge.map(|c| c.0))
    .bind(challenge.map(|c| c.1))
    .execute(db.pool())
    .await?;
    Ok(())
}

/// Stores an issued certificate (sealed) and releases the domain.
pub async fn store_certificate(
    tx: &mut Tx,
    domain: &str,
    sealed: &[u8],
    issued_at: i64,
    expires_at: i64,
) -> Result<()> {
    sqlx::query(
        "UPDATE app_domains SET cert_sealed = $2, cert_issued_at = $3, cert_expires_at = $4, \
         cert_error = NULL, cert_attempts = 0, cert_next_at = 0, cert_lease_until = 0, \
         challenge_token = NULL, challenge_answer = NULL, updated_at = $3 WHERE domain = $1",
    )
    .bind(domain)
    .bind(sealed)
    .bind(issued_at)
    .bind(expires_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// Records a failed issuance and when to try again; releases the domain.
pub async fn record_failure(
    tx: &mut Tx,
    domain: &str,
    error: &str,
    next_at: i64,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "UPDATE app_domains SET cert_error = $2, cert_attempts = cert_attempts + 1, \
         cert_next_at = $3, cert_lease_until = 0, challenge_token = NULL, \
         challenge_answer = NULL, updated_at = $4 WHERE domain = $1",
    )
    .bind(domain)
    .bind(error)
    .bind(next_at)
    .bind(now)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// The domain's row, whoever holds it (for the agent).
pub async fn get_any(db: &Db, domain: &str) -> Result<Option<Domain>> {
    let sql = format!("SELECT {COLUMNS} FROM app_domains WHERE domain = $1");
    Ok(sqlx::query_as(&sql)
        .bind(domain)
        .fetch_optional(db.pool())
        .await?)
}

/// The sealed credentials of the ACME account at `directory`.
pub async fn acme_account(db: &Db, directory: &str) -> Result<Option<Vec<u8>>> {
    Ok(
        sqlx::query_scalar("SELECT sealed FROM acme_accounts WHERE directory = $1")
            .bind(directory)
            .fetch_optional(db.pool())
            .await?,
    )
}

/// Keeps the account of `directory` unless a host stored one first; the
/// account to use either way.
pub async fn keep_acme_account(
    db: &Db,
    directory: &str,
    sealed: &[u8],
    now: i64,
) -> Result<Vec<u8>> {
    sqlx::query(
        "INSERT INTO acme_accounts (directory, sealed, created_at) VALUES ($1, $2, $3) \
         ON CONFLICT (directory) DO NOTHING",
    )
    .bind(directory)
    .bind(sealed)
    .bind(now)
    .execute(db.pool())
    .await?;
    Ok(acme_account(db, directory)
        .await?
        .unwrap_or_else(|| sealed.to_vec()))
}
