//! Subscriptions (logical replication, issue 32): the SQL the host runs on
//! a subscription's source (the preflight's questions, the slot's lag, the
//! sequences) and on its subscriber (the tables it lacks, the subscription
//! made, its state, the sequences set, the subscription dropped).
//!
//! Who runs what on the subscriber: `CREATE SUBSCRIPTION` needs a
//! superuser, and the apply worker runs triggers, defaults and index
//! expressions of the tenant's tables as the subscription's owner. So
//! the host's session makes it, then hands it to [`SUBSCRIBER_ROLE`], a
//! role of its own that is a member of the owner role and nothing else
//! (never a superuser, no password): the tenant's code in the apply worker
//! runs with the owner's rights at most (PostgreSQL 16 and later switch to
//! each table's owner, 15 runs as the subscription's owner). PostgreSQL 15
//! gives a subscription only to a superuser, so the role is one for the
//! length of that transaction, which no session runs as. The tenant does
//! not own the subscription, so it cannot point it at another address.

use sqlx::{Connection, PgConnection, Row};

use super::{query_error, quote_ident};
use crate::local::quote_literal;
use crate::{Error, Result};

/// The host's role that owns every subscription of a cluster.
pub const SUBSCRIBER_ROLE: &str = "plateau_subscriber";

/// What the preflight asks the source.
#[derive(Debug)]
pub struct SourceFacts {
    /// The major version (`15`).
    pub major: u32,
    pub wal_level: String,
    /// Whether the session's role may open a replication connection.
    pub can_replicate: bool,
}

pub async fn source_facts(conn: &mut PgConnection) -> Result<SourceFacts> {
    let row = sqlx::query(
        "SELECT pg_catalog.current_setting('server_version_num')::pg_catalog.int4, \
         pg_catalog.current_setting('wal_level'), \
         (SELECT r.rolsuper OR r.rolreplication FROM pg_catalog.pg_roles r \
          WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER)",
    )
    .fetch_one(&mut *conn)
    .await?;
    Ok(SourceFacts {
        major: (row.get::<i32, _>(0) / 10_000) as u32,
        wal_level: row.get(1),
        can_replicate: row.get::<Option<bool>, _>(2).unwrap_or(false),
    })
}

/// The tables publication `name` publishes, `(schema, table)`; `None`
/// without such a publication.
pub async fn published_tables(
    conn: &mut PgConnection,
    name: &str,
) -> Result<Option<Vec<(String, String)>>> {
    let exists = sqlx::query("SELECT 1 FROM pg_catalog.pg_publication WHERE pubname = $1")
        .bind(name)
        .fetch_optional(&mut *conn)
        .await?;
    if exists.is_none() {
        return Ok(None);
    }
    let rows = sqlx::query(
        "SELECT schemaname::pg_catalog.text, tablename::pg_catalog.text \
         FROM pg_catalog.pg_publication_tables WHERE pubname = $1 ORDER BY 1, 2",
    )
    .bind(name)
    .fetch_all(&mut *conn)
    .await?;
    Ok(Some(
        rows.into_iter().map(|r| (r.get(0), r.get(1))).collect(),
    ))
}

/// The tables of publication `name` whose updates and deletes could not be
/// replicated: no replica identity (`NOTHING`, or the default without a
/// primary key, or an index that is gone), when it publishes updates or
/// deletes. `schema.table`.
pub async fn without_identity(conn: &mut PgConnection, name: &str) -> Result<Vec<String>> {
    let rows = sqlx::query(
        "SELECT t.schemaname::pg_catalog.text OPERATOR(pg_catalog.||) '.' \
         OPERATOR(pg_catalog.||) t.tablename::pg_catalog.text \
         FROM pg_catalog.pg_publication p \
         JOIN pg_catalog.pg_publication_tables t ON t.pubname = p.pubname \
         JOIN pg_catalog.pg_namespace n ON n.nspname = t.schemaname \
         JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = t.tablename \
         WHERE p.pubname = $1 AND (p.pubupdate OR p.pubdelete) AND c.relreplident <> 'f' \
         AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_index i WHERE i.indrelid = c.oid \
           AND ((c.relreplident = 'd' AND i.indisprimary) \
             OR (c.relreplident = 'i' AND i.indisreplident))) \
         ORDER BY 1",
    )
    .bind(name)
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows.into_iter().map(|r| r.get(0)).collect())
}

/// Which of `tables` the database lacks (as ordinary or partitioned
/// tables), `schema.table`.
pub async fn missing_tables(
    conn: &mut PgConnection,
    tables: &[(String, String)],
) -> Result<Vec<String>> {
    let mut missing = Vec::new();
    for (schema, table) in tables {
        let found = sqlx::query(
            "SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n \
             ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2 \
             AND c.relkind IN ('r', 'p')",
        )
        .bind(schema)
        .bind(table)
        .fetch_optional(&mut *conn)
        .await?;
        if found.is_none() {
            missing.push(format!("{schema}.{table}"));
        }
    }
    Ok(missing)
}

/// Whether the database has subscription `name`.
pub async fn exists(conn: &mut PgConnection, name: &str) -> Result<bool> {
    Ok(
        sqlx::query("SELECT 1 FROM pg_catalog.pg_subscription WHERE subname = $1")
            .bind(name)
            .fetch_optional(&mut *conn)
            .await?
            .is_some(),
    )
}

/// Makes [`SUBSCRIBER_ROLE`] a member of `owner` only. The apply worker
/// logs in as the subscription's owner, so it may log in, but it has no
/// password: no client can (every connection needs SCRAM).
async fn ensure_subscriber_role(conn: &mut PgConnection, owner: &str) -> Result<()> {
    let role = quote_ident(SUBSCRIBER_ROLE);
    let found = sqlx::query("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = $1")
        .bind(SUBSCRIBER_ROLE)
        .fetch_optional(&mut *conn)
        .await?;
    let attributes =
        "LOGIN PASSWORD NULL NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS INHERIT";
    let verb = if found.is_none() { "CREATE" } else { "ALTER" };
    sqlx::query(&format!("{verb} ROLE {role} {attributes}"))
        .execute(&mut *conn)
        .await?;
    sqlx::query(&format!("GRANT {} TO {role}", quote_ident(owner)))
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// What a subscription is made with.
pub struct NewSubscription<'a> {
    pub name: &'a str,
    /// The libpq connection string the subscriber's server uses.
    pub conninfo: &'a str,
    pub publication: &'a str,
    pub slot: &'a str,
    pub copy_data: bool,
    /// A failover slot (PostgreSQL 17 on both ends), synchronized to the
    /// source's standbys.
    pub failover: bool,
}

/// Makes the subscription: created disabled by the host's session (which
/// makes its slot on the source), handed to [`SUBSCRIBER_ROLE`], then
/// enabled. A failure after the create drops it again.
pub async fn create(conn: &mut PgConnection, owner: &str, s: &NewSubscription<'_>) -> Result<()> {
    ensure_subscriber_role(conn, owner).await?;
    let name = quote_ident(s.name);
    sqlx::query(&format!(
        "CREATE SUBSCRIPTION {name} CONNECTION {} PUBLICATION {} \
         WITH (enabled = false, create_slot = true, slot_name = {}, copy_data = {}{})",
        quote_literal(s.conninfo),
        quote_ident(s.publication),
        quote_literal(s.slot),
        s.copy_data,
        if s.failover { ", failover = true" } else { "" },
    ))
    .execute(&mut *conn)
    .await
    .map_err(|e| match query_error(e) {
        Error::Query(m) => Error::Refused {
            code: "source_unreachable",
            detail: format!("the subscriber could not use the source: {m}"),
        },
        other => other,
    })?;
    if let Err(e) = hand_over(conn, s.name).await {
        let _ = drop(conn, s.name).await;
        return Err(e);
    }
    Ok(())
}

async fn hand_over(conn: &mut PgConnection, name: &str) -> Result<()> {
    let (role, name) = (quote_ident(SUBSCRIBER_ROLE), quote_ident(name));
    let mut tx = conn.begin().await?;
    for sql in [
        format!("ALTER ROLE {role} SUPERUSER"),
        format!("ALTER SUBSCRIPTION {name} OWNER TO {role}"),
        format!("ALTER ROLE {role} NOSUPERUSER"),
    ] {
        sqlx::query(&sql).execute(&mut *tx).await?;
    }
    tx.commit().await?;
    sqlx::query(&format!("ALTER SUBSCRIPTION {name} ENABLE"))
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Drops subscription `name` and its slot on the source; when the source
/// cannot be reached, the subscription alone (its slot left there).
/// Whether the slot was dropped with it.
pub async fn drop(conn: &mut PgConnection, name: &str) -> Result<bool> {
    if !exists(conn, name).await? {
        return Ok(false);
    }
    let quoted = quote_ident(name);
    let whole = sqlx::query(&format!("DROP SUBSCRIPTION {quoted}"))
        .execute(&mut *conn)
        .await;
    if whole.is_ok() {
        return Ok(true);
    }
    forget(conn, name).await?;
    Ok(false)
}

/// Drops subscription `name` and leaves its slot on the source.
async fn forget(conn: &mut PgConnection, name: &str) -> Result<()> {
    let quoted = quote_ident(name);
    for sql in [
        format!("ALTER SUBSCRIPTION {quoted} DISABLE"),
        format!("ALTER SUBSCRIPTION {quoted} SET (slot_name = NONE)"),
        format!("DROP SUBSCRIPTION {quoted}"),
    ] {
        sqlx::query(&sql).execute(&mut *conn).await?;
    }
    Ok(())
}

/// Drops every subscription of the session's database without touching
/// its source (a restored copy's, whose slots are the original's).
pub async fn forget_all(conn: &mut PgConnection) -> Result<()> {
    let names: Vec<(String,)> = sqlx::query_as(
        "SELECT subname::pg_catalog.text FROM pg_catalog.pg_subscription \
         WHERE subdbid = (SELECT oid FROM pg_catalog.pg_database \
           WHERE datname = pg_catalog.current_database())",
    )
    .fetch_all(&mut *conn)
    .await?;
    for (name,) in names {
        forget(conn, &name).await?;
    }
    Ok(())
}

/// A subscription's state on its subscriber.
#[derive(Debug, Default)]
pub struct Applied {
    pub enabled: bool,
    /// Whether its apply worker runs.
    pub worker: bool,
    pub tables_ready: i64,
    pub tables_syncing: i64,
    /// The last message from the source, RFC 3339.
    pub last_message_at: Option<String>,
    /// Its connection string (readable by superusers only).
    pub conninfo: String,
}

pub async fn applied(conn: &mut PgConnection, name: &str) -> Result<Option<Applied>> {
    let row = sqlx::query(
        "SELECT s.subenabled, s.subconninfo, \
         (SELECT pg_catalog.count(*) FROM pg_catalog.pg_stat_subscription w \
          WHERE w.subid = s.oid AND w.relid IS NULL AND w.pid IS NOT NULL), \
         (SELECT pg_catalog.count(*) FROM pg_catalog.pg_subscription_rel r \
          WHERE r.srsubid = s.oid AND r.srsubstate = 'r'), \
         (SELECT pg_catalog.count(*) FROM pg_catalog.pg_subscription_rel r \
          WHERE r.srsubid = s.oid AND r.srsubstate <> 'r'), \
         (SELECT pg_catalog.to_char(pg_catalog.max(w.last_msg_receipt_time) AT TIME ZONE 'UTC', \
            'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') \
          FROM pg_catalog.pg_stat_subscription w WHERE w.subid = s.oid) \
         FROM pg_catalog.pg_subscription s \
         WHERE s.subname = $1 AND s.subdbid = (SELECT oid FROM pg_catalog.pg_database \
           WHERE datname = pg_catalog.current_database())",
    )
    .bind(name)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.map(|r| Applied {
        enabled: r.get(0),
        conninfo: r.get(1),
        worker: r.get::<i64, _>(2) > 0,
        tables_ready: r.get(3),
        tables_syncing: r.get(4),
        last_message_at: r.get(5),
    }))
}

/// Bytes of WAL the source wrote that slot `slot` has not confirmed, and
/// whether a subscriber streams from it; `None` without the slot.
pub async fn slot_lag(conn: &mut PgConnection, slot: &str) -> Result<Option<(i64, bool)>> {
    let row = sqlx::query(
        "SELECT CAST(pg_catalog.pg_wal_lsn_diff(pg_catalog.pg_current_wal_lsn(), \
         confirmed_flush_lsn) AS pg_catalog.int8), active \
         FROM pg_catalog.pg_replication_slots WHERE slot_name = $1",
    )
    .bind(slot)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.map(|r| (r.get::<Option<i64>, _>(0).unwrap_or(0).max(0), r.get(1))))
}

/// The source's sequences that were ever used: `(schema, name, last value)`.
pub async fn sequences(conn: &mut PgConnection) -> Result<Vec<(String, String, i64)>> {
    let rows = sqlx::query(
        "SELECT schemaname::pg_catalog.text, sequencename::pg_catalog.text, last_value \
         FROM pg_catalog.pg_sequences WHERE last_value IS NOT NULL \
         AND schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2",
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect())
}

/// Moves sequence `schema.name` on to `value` (never back: a value it
/// already passed stays); the value it has now, `None` without such a
/// sequence. Only PostgreSQL's `setval` runs, as the host's role.
pub async fn set_sequence(
    conn: &mut PgConnection,
    (schema, name): (&str, &str),
    value: i64,
) -> Result<Option<i64>> {
    let row = sqlx::query(
        "SELECT pg_catalog.setval(c.oid::pg_catalog.regclass, \
         pg_catalog.int8larger($3, COALESCE(s.last_value, $3)), true) \
         FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
         JOIN pg_catalog.pg_sequences s ON s.schemaname = n.nspname AND s.sequencename = c.relname \
         WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind = 'S'",
    )
    .bind(schema)
    .bind(name)
    .bind(value)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.map(|r| r.get(0)))
}
