//! Managed dump restore as the data plane runs it (issue 32): the
//! agent's backup loop takes each restore job asked for
//! (`database_dump_restores`) in a task of its own. The dump (uploaded to
//! the backup store under `<database>/dumps/<key>`, and kept there for
//! retries) is fetched, un-gzipped when it is gzip, and, when it is
//! pg_dump's custom format, turned into plain SQL by the host's newest
//! `pg_restore` without any connection (`-f -`, no owners, no
//! privileges, run as an unprivileged user since the input is the
//! tenant's). The extensions of `preSeed` are created by the host's role
//! first; then the SQL runs in one transaction as the database's login
//! role, never a superuser, with `search_path` pinned ([`inside::dump`]).
//! A failure rolls the dump back and drops the extensions the job made,
//! so the database is as it was; the job keeps the root cause. Done, the
//! job holds the row count of every table.
//!
//! **Trust boundary:** nothing of the dump runs with more than the
//! owner role's rights: pg_restore only reads it, psql never runs it (its
//! meta-commands would run on the host), and statements that would end
//! the transaction, change owners or grant to other roles are refused or
//! left out.

use std::io::Read as _;
use std::path::PathBuf;

use object_store::ObjectStoreExt as _;
use object_store::path::Path as ObjectPath;
use plateau_core::time;
use plateau_store::databases::dumps::{self, Job};
use sqlx::Connection as _;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::inside::{dump, extensions};
use crate::service::DatabaseService;
use crate::spec::extension_sql_name;
use crate::{Error, Result};

/// The most SQL one dump may expand to (un-gzipped, or written by
/// pg_restore): a small compressed upload must not fill the agent's
/// memory (a gzip bomb).
pub const MAX_SQL_BYTES: u64 = 1024 * 1024 * 1024;

/// Refused: the dump expands past [`MAX_SQL_BYTES`].
fn too_large() -> Error {
    Error::Refused {
        code: "dump_refused",
        detail: format!("the dump expands to more than {MAX_SQL_BYTES} bytes of SQL"),
    }
}

/// Where upload `key` of database `database_id` is kept.
pub fn dump_key(database_id: &str, key: &str) -> ObjectPath {
    ObjectPath::from(format!("{database_id}/dumps/{key}"))
}

/// The newest `pg_restore` of the host's PostgreSQL client packages.
fn pg_restore() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin/pg_restore");
            bin.exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
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
        let sql = self.dump_as_sql(&job.database_id, &job.dump_key).await?;
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
            Ok(()) => {
                let installed = dump::installed(&mut admin).await?;
                let (role, password) = self.login(&d, &placement).await?;
                match self
                    .provider()
                    .connect(&placement, &role, &password, &placement.database)
                    .await
                {
                    Ok(mut conn) => {
                        let done = dump::restore(&mut conn, &sql[..], &installed).await;
                        let counts = match done {
                            Ok(()) => dump::table_counts(&mut conn).await,
                            Err(e) => Err(e),
                        };
                        let _ = conn.close().await;
                        counts
                    }
                    Err(e) => Err(e),
                }
            }
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

    /// The dump `key` of database `database_id` as plain SQL: un-gzipped,
    /// and turned from pg_dump's custom format by `pg_restore`.
    async fn dump_as_sql(&self, database_id: &str, key: &str) -> Result<Vec<u8>> {
        let store = self.provider().dump_store();
        let got = store
            .get(&dump_key(database_id, key))
            .await
            .map_err(|e| Error::Missing(format!("dump {key}: {e}")))?
            .bytes()
            .await
            .map_err(|e| Error::Unavailable(format!("backup store: {e}")))?;
        let mut data = got.to_vec();
        if data.starts_with(&[0x1f, 0x8b]) {
            let mut plain = Vec::new();
            flate2::read::MultiGzDecoder::new(&data[..])
                .take(MAX_SQL_BYTES + 1)
                .read_to_end(&mut plain)
                .map_err(|e| Error::Refused {
                    code: "dump_refused",
                    detail: format!("the dump is not a whole gzip file: {e}"),
                })?;
            if plain.len() as u64 > MAX_SQL_BYTES {
                return Err(too_large());
            }
            data = plain;
        }
        if !data.starts_with(b"PGDMP") {
            return Ok(data);
        }
        let bin = pg_restore().ok_or_else(|| {
            Error::Unavailable(
                "pg_restore is not installed on this host; install postgresql-client".to_owned(),
            )
        })?;
        let user = nix::unistd::geteuid().is_root().then_some("nobody");
        let mut cmd = crate::local::supervise::command(user, &bin);
        cmd.args([
            "--no-owner",
            "--no-privileges",
            "--no-tablespaces",
            "--no-publications",
            "--no-subscriptions",
            "--no-security-labels",
            "-f",
            "-",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn()?;
        let mut stdin = child.stdin.take().expect("piped");
        let feed = tokio::spawn(async move {
            let _ = stdin.write_all(&data).await;
            let _ = stdin.shutdown().await;
        });
        let mut stdout = child.stdout.take().expect("piped").take(MAX_SQL_BYTES + 1);
        let mut sql = Vec::new();
        stdout.read_to_end(&mut sql).await?;
        if sql.len() as u64 > MAX_SQL_BYTES {
            let _ = child.kill().await;
            let _ = feed.await;
            return Err(too_large());
        }
        let out = child.wait_with_output().await?;
        let _ = feed.await;
        if !out.status.success() {
            let why = String::from_utf8_lossy(&out.stderr);
            return Err(Error::Refused {
                code: "dump_refused",
                detail: format!(
                    "pg_restore cannot read the dump: {}",
                    why.lines().next().unwrap_or("no reason given").trim()
                ),
            });
        }
        Ok(sql)
    }
}
