//! Managed dump restore as the data plane runs it (issue 32): the
//! agent's backup loop takes each restore job asked for
//! (`database_dump_restores`) in a task of its own. The dump (uploaded to
//! the backup store under `<database>/dumps/<key>`, and kept there for
//! retries) is streamed ([`stream`]): read from the store as it comes,
//! un-gzipped when it is gzip, and, when it is pg_dump's custom format,
//! turned into plain SQL by the `pg_restore` of the database's version
//! without any connection (`-f -`, no owners, no privileges, run as an
//! unprivileged user since the input is the tenant's). The extensions of
//! `preSeed` are created by the host's role first; then the SQL runs in
//! one transaction as the database's login role, never a superuser, with
//! `search_path` pinned ([`inside::dump`]), and commits only once
//! pg_restore has read the whole dump. A failure rolls the dump back and
//! drops the extensions the job made, so the database is as it was; the
//! job keeps the root cause. Done, the job holds the row count of every
//! table.
//!
//! **Trust boundary:** nothing of the dump runs with more than the
//! owner role's rights: pg_restore only reads it, psql never runs it (its
//! meta-commands would run on the host), and statements that would end
//! the transaction, change owners or grant to other roles are refused or
//! left out.

pub mod stream;

use object_store::path::Path as ObjectPath;
use plateau_core::time;
use plateau_store::databases::dumps::{self, Job};
use sqlx::Connection as _;

use crate::inside::{dump, extensions};
use crate::service::DatabaseService;
use crate::spec::extension_sql_name;
use crate::{Error, Result};

/// The least one dump may hold, as uploaded or as the SQL it expands to
/// (un-gzipped, or written by pg_restore), before it is refused.
pub const MIN_DUMP_LIMIT: u64 = 1024 * 1024 * 1024;

/// The most one dump may hold for a database of `disk_gb`, as uploaded
/// and as the SQL it expands to: the database's disk quota (`diskGb`,
/// within the plan's database disk), at least [`MIN_DUMP_LIMIT`]. A dump
/// bigger than the disk it is restored into could not fit (its rows,
/// indexes and WAL take more room than its SQL), and a gzip bomb ends
/// there rather than filling the host's disk. Neither the upload nor the
/// restore holds the dump (both stream), so the host's memory does not
/// grow with it.
pub fn max_bytes(disk_gb: i64) -> u64 {
    MIN_DUMP_LIMIT.max(u64::try_from(disk_gb).unwrap_or(0) * 1024 * 1024 * 1024)
}

/// Where upload `key` of database `database_id` is kept.
pub fn dump_key(database_id: &str, key: &str) -> ObjectPath {
    ObjectPath::from(format!("{database_id}/dumps/{key}"))
}

impl DatabaseService {
    /// Runs job `job` and records how it went.
    pub(crate) async fn run_dump_job(&self, job: Job) {
        let outcome = self.restore_dump(&job).await;
        let now = time::now_ms();
        let recorded = match &outcome {
            Ok(counts) => dumps::finish(self.db(), &job.id, Ok(counts), now).await,
            Err(e) => {
                tracing::warn!(database = %job.database_id, job = %job.id, error = %e, "a dump restore failed");
                dumps::finish(self.db(), &job.id, Err(&e.to_string()), now).await
            }
        };
        if let Err(e) = recorded {
            tracing::warn!(job = %job.id, error = %e, "recording a dump restore");
        }
    }

    /// The restore itself: the table counts (JSON).
    async fn restore_dump(&self, job: &Job) -> Result<String> {
        let d = plateau_store::databases::get(self.db(), &job.org_id, &job.database_id)
            .await?
            .ok_or_else(|| Error::Missing(format!("database {} is gone", job.database_id)))?;
        let placement = Self::placement(&d)?;
        let seeds: Vec<String> = serde_json::from_str(&job.pre_seed).unwrap_or_default();

        // The extensions asked for, by the host's role.
        let mut admin = self.admin(&d).await?;
        let before = dump::installed(&mut admin).await?;
        let available = self.provider().available_extensions(&placement).await?;
        let mut made = Vec::new();
        let mut seeded = Ok(());
        for name in &seeds {
            let sql_name = extension_sql_name(name).to_owned();
            if before.contains(&sql_name) {
                continue;
            }
            seeded = extensions::create(&mut admin, &available, &d.version, name, None).await;
            if seeded.is_err() {
                break;
            }
            made.push(sql_name);
        }
        let restored = match seeded {
            Ok(()) => match dump::installed(&mut admin).await {
                Ok(installed) => self.run_as_owner(&d, &placement, job, &installed).await,
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        if restored.is_err() {
            // Untouched: the extensions this job made go too.
            for name in made.iter().rev() {
                let drop = format!(
                    "DROP EXTENSION IF EXISTS {}",
                    crate::inside::quote_ident(name)
                );
                if let Err(e) = sqlx::Executor::execute(&mut admin, sqlx::raw_sql(&drop)).await {
                    tracing::warn!(database = %d.id, extension = %name, error = %e, "dropping a pre-seeded extension");
                }
            }
        }
        let _ = admin.close().await;
        Ok(serde_json::to_string(&restored?).expect("counts serialize"))
    }

    /// Streams the dump of `job` into database `d` in one transaction as
    /// its login role; `installed` are the extensions it has. The row
    /// counts of its tables.
    async fn run_as_owner(
        &self,
        d: &plateau_store::databases::Database,
        placement: &crate::Placement,
        job: &Job,
        installed: &std::collections::HashSet<String>,
    ) -> Result<std::collections::BTreeMap<String, i64>> {
        let (role, password) = self.login(d, placement).await?;
        let mut conn = self
            .provider()
            .connect(placement, &role, &password, &placement.database)
            .await?;
        let opened = stream::open(
            self.provider().dump_store().store.as_ref(),
            &dump_key(&job.database_id, &job.dump_key),
            || self.provider().pg_restore(&d.version),
            max_bytes(d.disk_gb),
        )
        .await;
        let done = match opened {
            Ok((sql, ended)) => dump::restore(&mut conn, sql, installed, ended.check()).await,
            Err(e) => Err(e),
        };
        let counts = match done {
            Ok(()) => dump::table_counts(&mut conn).await,
            Err(e) => Err(e),
        };
        let _ = conn.close().await;
        counts
    }
}
