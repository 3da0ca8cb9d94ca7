//! Point-in-time restore into a new local cluster (issue 32): the base
//! backup unpacked as its leader's data directory with its backup label,
//! the archived WAL it needs fetched beside it, recovery to the target on
//! a private socket with no TCP listener (nobody reaches a half-recovered
//! copy), promotion, new passwords for the host's role and the owner,
//! then the cluster's own settings and the rest of it (standbys, pooler,
//! write endpoint) as a create makes them. A failure, or a try
//! interrupted by a stop of the agent, leaves nothing: the next try (or
//! the failure itself) removes what was made.

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt as _;
use nix::sys::signal::Signal;
use object_store::ObjectStoreExt as _;
use sqlx::Connection as _;
use sqlx::postgres::{PgConnectOptions, PgConnection};

use super::archive::{base_key, segment_of, wal_key};
use super::{LocalProvider, conf, quote_ident, quote_literal, supervise, users};
use crate::scram;
use crate::spec::{ADMIN_ROLE, ClusterSpec, Credentials, Placement, RestoreFrom};
use crate::{Error, Result};

/// How long recovery may take before the restore gives up.
const RECOVER_WITHIN: Duration = Duration::from_secs(30 * 60);
/// How long the server may take to write its pid file.
const START_WITHIN: Duration = Duration::from_secs(30);

impl LocalProvider {
    /// See [`crate::DatabaseProvider::restore`].
    pub(super) async fn restore_cluster(
        &self,
        spec: &ClusterSpec,
        credentials: &Credentials,
        from: &RestoreFrom,
    ) -> Result<Placement> {
        let mut placement = self.place(spec)?;
        placement.owner = from.owner.clone();
        placement.database = from.database.clone();
        let made = async {
            let owner = self.new_cluster_owner(&spec.id)?;
            self.mkdir_owned(&self.cluster_dir(&spec.id), owner.as_ref())?;
            self.recover_member(spec, &placement, credentials, from, None)
                .await?;
            self.complete_cluster(spec, &placement, credentials).await
        }
        .await;
        if let Err(e) = made {
            let _ = self.destroy(&placement).await;
            return Err(e);
        }
        Ok(placement)
    }

    /// Makes the leader of `placement` (its member `leader` on `port`, in
    /// the cluster's directory, which exists) from a base backup of
    /// another cluster and its WAL, recovered, promoted, given the
    /// passwords of `credentials` and started with the cluster's own
    /// settings. `beside`: the names of the timeline histories the cluster
    /// already used (a reset of a branch), which the copy's new timeline
    /// must not take; recovery then follows the source's newest timeline.
    pub(super) async fn recover_member(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
        from: &RestoreFrom,
        beside: Option<&[(String, Bytes)]>,
    ) -> Result<()> {
        let bin = self.bin(&spec.version)?;
        let cluster = self.cluster_dir(&spec.id);
        let owner = users::owner_of(&cluster).filter(|_| self.root);
        self.mkdir(&cluster.join(&placement.leader))?;
        let data = self.data_dir(&spec.id, &placement.leader);
        self.mkdir(&data)?;
        self.download_tar(&base_key(&from.source, &from.backup_id, "tar"), &data)
            .await?;
        let store = &self.config.backups.store;
        for (ext, file) in [("label", "backup_label"), ("map", "tablespace_map")] {
            let got = store
                .get(&base_key(&from.source, &from.backup_id, ext))
                .await
                .map_err(|e| Error::Unavailable(format!("backup store: {e}")))?;
            let text = got
                .bytes()
                .await
                .map_err(|e| Error::Unavailable(format!("backup store: {e}")))?;
            if !text.iter().all(u8::is_ascii_whitespace) {
                std::fs::write(data.join(file), &text)?;
            }
        }
        std::fs::create_dir_all(data.join("pg_wal").join("archive_status"))?;
        std::fs::write(data.join("recovery.signal"), "")?;
        let wal = cluster.join(conf::RESTORE_WAL);
        let socket = cluster.join(conf::RESTORE_SOCKET);
        // What a killed earlier try left.
        for dir in [&wal, &socket] {
            if dir.exists() {
                std::fs::remove_dir_all(dir)?;
            }
            self.mkdir(dir)?;
        }
        let source_timelines = self.fetch_wal(from, &wal).await?;
        let timeline = match beside {
            None => None,
            Some(histories) => {
                for (name, text) in histories {
                    if !wal.join(name).exists() {
                        std::fs::write(wal.join(name), text)?;
                    }
                }
                Some(source_timelines.max(timeline_of(&from.wal_start)))
            }
        };
        if let Some(owner) = &owner {
            for dir in [&cluster.join(&placement.leader), &wal, &socket] {
                users::chown_tree(dir, owner)?;
            }
        }
        // PostgreSQL's `recovery_target_time` takes no `T` nor `Z`.
        let target = from.target_time.map(|ms| {
            plateau_core::time::to_rfc3339(ms)
                .replacen('T', " ", 1)
                .replace('Z', "+00")
        });
        self.write_private(
            &data.join(conf::PG_CONF),
            &(conf::postgres(spec, &self.config.address, placement.port)
                + &conf::recovery(&socket, &wal, target.as_deref(), timeline)),
        )?;
        self.write_private(&data.join("pg_hba.conf"), &conf::restore_hba())?;
        self.ensure_spool(&spec.id)?;

        // Recovery, to its end: the server promotes itself at the target.
        let user = self.user_of(&spec.id);
        let mut start = supervise::command(user.as_deref(), &bin.join("pg_ctl"));
        start
            .arg("-D")
            .arg(&data)
            .arg("-l")
            .arg(data.with_file_name(conf::LOG_FILE))
            .args(["-W", "start"]);
        supervise::run(start, "pg_ctl start").await?;
        let mut admin = self.until_promoted(&data, &socket, placement.port).await?;
        for sql in [
            format!(
                "ALTER ROLE {ADMIN_ROLE} PASSWORD {}",
                quote_literal(&scram::verifier(&credentials.admin_password))
            ),
            format!(
                "ALTER ROLE {} PASSWORD {}",
                quote_ident(&placement.owner),
                quote_literal(&scram::verifier(&credentials.owner_password))
            ),
        ] {
            sqlx::Executor::execute(&mut admin, sqlx::raw_sql(&sql)).await?;
        }
        // The source's second login role (password rotation) holds the
        // source's password: the copy is reached with its own only.
        let alias = crate::rotation::alias_of(&placement.owner);
        if sqlx::query("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = $1")
            .bind(&alias)
            .fetch_optional(&mut admin)
            .await?
            .is_some()
        {
            let sql = format!("ALTER ROLE {} PASSWORD NULL", quote_ident(&alias));
            sqlx::Executor::execute(&mut admin, sqlx::raw_sql(&sql)).await?;
        }
        // A subscriber's copy keeps no subscription: each names a slot of
        // the original's on its source, which the copy would take from it
        // (no apply worker ran here: `conf::recovery`).
        let mut own = PgConnection::connect_with(&crate::host_session::pin(
            PgConnectOptions::new()
                .socket(&socket)
                .port(placement.port)
                .username(ADMIN_ROLE)
                .database(&placement.database)
                .application_name("plateau"),
        ))
        .await?;
        crate::inside::subscriptions::forget_all(&mut own).await?;
        own.close().await?;
        admin.close().await?;
        let mut stop = supervise::command(user.as_deref(), &bin.join("pg_ctl"));
        stop.arg("-D").arg(&data).args(["-m", "fast", "-w", "stop"]);
        supervise::run(stop, "pg_ctl stop").await?;
        std::fs::remove_dir_all(&wal)?;
        std::fs::remove_dir_all(&socket)?;

        // The cluster's own certificate (the backup holds the source's),
        // its own settings, then what a create adds.
        self.ensure_tls(&spec.id, &self.config.address, &data)?;
        self.write_private(
            &data.join(conf::PG_CONF),
            &conf::postgres(spec, &self.config.address, placement.port),
        )?;
        self.write_private(&data.join("pg_hba.conf"), &conf::hba())?;
        supervise::start_postgres(user.as_deref(), &bin, &data).await
    }

    /// Fetches the archived WAL a restore of `from` may ask for: its
    /// segments from the backup's first on, and every timeline history;
    /// the source's newest timeline that has a history (0 for none).
    async fn fetch_wal(&self, from: &RestoreFrom, into: &Path) -> Result<u32> {
        let store = &self.config.backups.store;
        let mut newest = 0;
        for name in self.archived_wal(&from.source).await? {
            if name.ends_with(".history") {
                newest = newest.max(timeline_of(&name));
            }
            let wanted = name.ends_with(".history")
                || (!name.ends_with(".partial")
                    && segment_of(&name) >= segment_of(&from.wal_start));
            if !wanted {
                continue;
            }
            let got = store
                .get(&wal_key(&from.source, &name))
                .await
                .map_err(|e| Error::Unavailable(format!("backup store: {e}")))?;
            let mut file = tokio::fs::File::create(into.join(&name)).await?;
            let mut stream = got.into_stream();
            while let Some(chunk) = stream.next().await {
                let chunk: Bytes =
                    chunk.map_err(|e| Error::Unavailable(format!("backup store: {e}")))?;
                tokio::io::AsyncWriteExt::write_all(&mut file, &chunk).await?;
            }
        }
        Ok(newest)
    }

    /// Waits until the server recovering in `data` has promoted itself; a
    /// connection to it over its private socket. A server that stops
    /// (its target not reached, WAL missing) fails the restore with what
    /// its log says.
    async fn until_promoted(&self, data: &Path, socket: &Path, port: u16) -> Result<PgConnection> {
        let options = crate::host_session::pin(
            PgConnectOptions::new()
                .socket(socket)
                .port(port)
                .username(ADMIN_ROLE)
                .database("postgres")
                .application_name("plateau"),
        );
        let begun = tokio::time::Instant::now();
        let mut seen = false;
        loop {
            if let Ok(mut conn) = PgConnection::connect_with(&options).await {
                let (recovering,): (bool,) =
                    sqlx::query_as("SELECT pg_catalog.pg_is_in_recovery()")
                        .fetch_one(&mut conn)
                        .await?;
                if !recovering {
                    return Ok(conn);
                }
                let _ = conn.close().await;
            }
            let alive = supervise::postgres_pid(data).is_some();
            seen |= alive;
            let gone = if seen {
                !alive
            } else {
                begun.elapsed() >= START_WITHIN
            };
            if gone || begun.elapsed() >= RECOVER_WITHIN {
                if let Some(pid) = supervise::postgres_pid(data) {
                    supervise::stop_pid(pid, Signal::SIGQUIT).await;
                }
                let log = std::fs::read_to_string(data.with_file_name(conf::LOG_FILE))
                    .unwrap_or_default();
                let last: Vec<&str> = log
                    .lines()
                    .filter(|l| l.contains("FATAL") || l.contains("ERROR"))
                    .collect();
                return Err(Error::Unavailable(format!(
                    "recovery did not complete: {}",
                    last.last().copied().unwrap_or("the server stopped")
                )));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// The timeline of a WAL file or history file name (its first 8 hex
/// digits); 0 for a name that has none.
pub(super) fn timeline_of(name: &str) -> u32 {
    name.get(..8)
        .and_then(|t| u32::from_str_radix(t, 16).ok())
        .unwrap_or(0)
}
