//! The disk quota of a cluster (`diskGb`, spec section 8's DB disk): the
//! supervisor compares the size of the cluster's databases with it on a
//! timer, and a cluster over its quota is made read-only, as managed
//! PostgreSQL services do: new transactions default to read-only
//! (`ALTER SYSTEM SET default_transaction_read_only`, which also reaches
//! sessions already open, pooled ones included). A customer frees space
//! in a session of their own after `SET default_transaction_read_only =
//! off` (the rows they delete, `TRUNCATE`, `DROP`); once the size is back
//! under the quota, writes are allowed again.
//!
//! The host's own role keeps writing (roles, extensions, ownership), by a
//! setting of its own that overrides the default.

use sqlx::{PgConnection, Row};

use super::quote_ident;
use crate::Result;
use crate::spec::ADMIN_ROLE;

/// `disk_gb` in bytes.
pub fn quota_bytes(disk_gb: i64) -> i64 {
    disk_gb.saturating_mul(1 << 30)
}

/// What a disk check found.
#[derive(Clone, Copy, Debug)]
pub struct DiskUsage {
    /// The size of every database of the cluster, in bytes.
    pub used_bytes: i64,
    /// Whether the cluster is read-only for being over its quota.
    pub read_only: bool,
}

/// The cluster's size and whether the quota's read-only mode is on (from
/// the configuration files, which the host's own role's setting does not
/// mask). Needs the host's superuser connection, whose settings
/// ([`crate::host_session`]) keep a tenant's functions out of it.
pub async fn usage(conn: &mut PgConnection) -> Result<DiskUsage> {
    let row = sqlx::query(
        "SELECT (SELECT pg_catalog.sum(pg_catalog.pg_database_size(d.oid))::pg_catalog.int8 \
                 FROM pg_catalog.pg_database d), \
         EXISTS (SELECT 1 FROM pg_catalog.pg_file_settings \
                 WHERE name = 'default_transaction_read_only' AND setting = 'on' AND applied)",
    )
    .fetch_one(&mut *conn)
    .await?;
    Ok(DiskUsage {
        used_bytes: row.get::<Option<i64>, _>(0).unwrap_or(0),
        read_only: row.get(1),
    })
}

/// Turns the quota's read-only mode on or off, for every session.
pub async fn set_read_only(conn: &mut PgConnection, on: bool) -> Result<()> {
    if on {
        let admin = quote_ident(ADMIN_ROLE);
        sqlx::query(&format!(
            "ALTER ROLE {admin} SET default_transaction_read_only = off"
        ))
        .execute(&mut *conn)
        .await?;
        sqlx::query("ALTER SYSTEM SET default_transaction_read_only = on")
            .execute(&mut *conn)
            .await?;
    } else {
        sqlx::query("ALTER SYSTEM RESET default_transaction_read_only")
            .execute(&mut *conn)
            .await?;
    }
    sqlx::query("SELECT pg_catalog.pg_reload_conf()")
        .execute(&mut *conn)
        .await?;
    Ok(())
}
