//! Operations on a cluster's database: its figures from the statistics
//! views, and `fix-ownership` (the owner role owns every object of the
//! customer's roles, with default privileges for what they make later).

use serde::Serialize;
use sqlx::{PgConnection, Row};
use utoipa::ToSchema;

use super::{query_error, quote_ident};
use crate::Result;

/// Figures of the database, from the statistics views.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = DatabaseMetrics)]
pub struct Metrics {
    /// Sessions connected to the database now.
    pub connections: i64,
    pub max_connections: i64,
    /// Transactions committed and rolled back since the statistics reset.
    pub commits: i64,
    pub rollbacks: i64,
    /// Share of block reads served from shared buffers, 0 to 1.
    pub cache_hit_ratio: f64,
    pub size_bytes: i64,
    /// The largest replication lag in bytes; null without replicas.
    pub replication_lag_bytes: Option<i64>,
    /// The size of all the cluster's databases, which the disk quota counts.
    pub disk_used_bytes: i64,
    /// `diskGb` in bytes.
    pub disk_quota_bytes: i64,
    /// True while the cluster is over its disk quota: transactions are
    /// read-only unless a session sets `default_transaction_read_only = off`
    /// to free space.
    pub read_only: bool,
}

pub async fn metrics(conn: &mut PgConnection, database: &str, disk_gb: i64) -> Result<Metrics> {
    let disk = super::quota::usage(conn).await?;
    let row = sqlx::query(
        "SELECT (SELECT pg_catalog.count(*) FROM pg_catalog.pg_stat_activity WHERE datname = $1), \
         pg_catalog.current_setting('max_connections')::pg_catalog.int8, \
         xact_commit, xact_rollback, blks_hit, blks_read, pg_catalog.pg_database_size($1::pg_catalog.name), \
         (SELECT pg_catalog.max(pg_catalog.pg_wal_lsn_diff(pg_catalog.pg_current_wal_lsn(), replay_lsn))::pg_catalog.int8 \
          FROM pg_catalog.pg_stat_replication) \
         FROM pg_catalog.pg_stat_database WHERE datname = $1",
    )
    .bind(database)
    .fetch_one(&mut *conn)
    .await?;
    let hit: i64 = row.get(4);
    let read: i64 = row.get(5);
    Ok(Metrics {
        connections: row.get(0),
        max_connections: row.get(1),
        commits: row.get(2),
        rollbacks: row.get(3),
        cache_hit_ratio: if hit + read == 0 {
            1.0
        } else {
            hit as f64 / (hit + read) as f64
        },
        size_bytes: row.get(6),
        replication_lag_bytes: row.get(7),
        disk_used_bytes: disk.used_bytes,
        disk_quota_bytes: super::quota::quota_bytes(disk_gb),
        read_only: disk.read_only,
    })
}

/// What `fix-ownership` did.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Ownership {
    pub owner: String,
    /// The roles whose objects now belong to the owner.
    pub reassigned_from: Vec<String>,
}

/// Gives the owner every object of the customer's other roles, the public
/// schema, and default privileges on what those roles make later.
/// Idempotent.
pub async fn fix_ownership(conn: &mut PgConnection, owner: &str) -> Result<Ownership> {
    let roles: Vec<String> = sqlx::query(
        "SELECT rolname FROM pg_catalog.pg_roles WHERE NOT rolsuper AND rolname NOT LIKE 'pg\\_%' \
         AND rolname NOT LIKE 'plateau\\_%' AND rolname <> $1 ORDER BY rolname",
    )
    .bind(owner)
    .fetch_all(&mut *conn)
    .await?
    .into_iter()
    .map(|r| r.get(0))
    .collect();
    let o = quote_ident(owner);
    let mut statements = vec![
        format!("ALTER SCHEMA public OWNER TO {o}"),
        format!("GRANT ALL ON ALL TABLES IN SCHEMA public TO {o}"),
        format!("GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO {o}"),
    ];
    for role in &roles {
        let r = quote_ident(role);
        statements.push(format!("REASSIGN OWNED BY {r} TO {o}"));
        statements.push(format!(
            "ALTER DEFAULT PRIVILEGES FOR ROLE {r} GRANT ALL ON TABLES TO {o}"
        ));
        statements.push(format!(
            "ALTER DEFAULT PRIVILEGES FOR ROLE {r} GRANT ALL ON SEQUENCES TO {o}"
        ));
    }
    for sql in statements {
        sqlx::Executor::execute(&mut *conn, sqlx::raw_sql(&sql))
            .await
            .map_err(query_error)?;
    }
    Ok(Ownership {
        owner: owner.to_owned(),
        reassigned_from: roles,
    })
}
