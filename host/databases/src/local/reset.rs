//! Branch reset of a local cluster (issue 32): a fresh copy of the parent
//! is made beside the running branch, as a member of its own (the next
//! free `nodeN`, on a new port) recovered from the parent's base backup
//! and WAL exactly as a restore makes a cluster; the old members keep
//! serving meanwhile. Once the copy answers, the service keeps its
//! placement; then pgbouncer (`uri`) and the write endpoint (`writeUri`)
//! are pointed at it on their own ports (a reload: the URIs do not
//! change), the old leader is left a moment to finish the transactions it
//! runs, and the old members are stopped and removed.
//!
//! A member directory the placement does not list (a *stray*) is what an
//! interrupted reset left: the copy of a try killed before the swap, or
//! the old members of one killed after it. The next apply removes them
//! (`remove_strays`), so a killed reset leaves the branch old or new.
//!
//! The copy gets a timeline of its own: the histories of every timeline
//! the branch already used go beside the parent's WAL, so its promotion
//! takes the first number above them and its WAL never shares a name with
//! the branch's earlier WAL in the spool or the archive.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use nix::sys::signal::Signal;
use object_store::ObjectStoreExt as _;
use sqlx::Connection as _;

use super::archive::wal_key;
use super::{LocalProvider, conf, quote_ident, quote_literal, supervise};
use crate::spec::{ClusterSpec, Credentials, Node, Placement, RestoreFrom};
use crate::{Error, Result};

/// How long the old leader may finish what it runs after the endpoints
/// moved, before it is stopped (fast: open transactions are rolled back).
const DRAIN_WITHIN: Duration = Duration::from_secs(5);

impl LocalProvider {
    /// See [`crate::DatabaseProvider::prepare_reset`].
    pub(super) async fn prepare_reset(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
        from: &RestoreFrom,
    ) -> Result<Placement> {
        self.remove_strays(placement).await;
        let taken: HashSet<String> = placement.nodes().into_iter().map(|n| n.name).collect();
        let name = (0..)
            .map(|i| format!("node{i}"))
            .find(|n| !taken.contains(n))
            .unwrap_or_default();
        let node = Node {
            name,
            port: self.allocate_port(&spec.id)?,
        };
        let mut fresh = placement.clone();
        fresh.members = vec![node.clone()];
        fresh.leader = node.name.clone();
        fresh.port = node.port;
        fresh.owner = from.owner.clone();
        fresh.database = from.database.clone();
        let made = async {
            let histories = self.own_histories(&spec.id).await?;
            self.recover_member(spec, &fresh, credentials, from, Some(&histories))
                .await?;
            self.carry_verifiers(placement, &fresh, credentials).await
        }
        .await;
        if let Err(e) = made {
            self.remove_strays(placement).await;
            return Err(e);
        }
        Ok(fresh)
    }

    /// Gives the login roles of the copy `fresh` (the owner, its alias)
    /// the very SCRAM verifiers they have in the running branch: pgbouncer
    /// logs in to the server with the keys of its client's own login, so a
    /// client logged in before the swap goes on after it only if the salt
    /// is the same.
    async fn carry_verifiers(
        &self,
        placement: &Placement,
        fresh: &Placement,
        credentials: &Credentials,
    ) -> Result<()> {
        let roles = [fresh.owner.clone(), crate::rotation::alias_of(&fresh.owner)];
        let mut old = self
            .admin_at(placement, credentials, placement.port)
            .await?;
        let verifiers: Vec<(String, Option<String>)> = sqlx::query_as(
            "SELECT rolname::pg_catalog.text, rolpassword FROM pg_catalog.pg_authid \
             WHERE rolname OPERATOR(pg_catalog.=) ANY($1::pg_catalog.text[])",
        )
        .bind(&roles[..])
        .fetch_all(&mut old)
        .await?;
        let _ = old.close().await;
        let mut copy = self.admin_at(fresh, credentials, fresh.port).await?;
        for (role, verifier) in verifiers {
            let Some(verifier) = verifier else { continue };
            let exists: Option<i32> = sqlx::query_scalar(
                "SELECT 1 FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) $1",
            )
            .bind(&role)
            .fetch_optional(&mut copy)
            .await?;
            if exists.is_some() {
                let sql = format!(
                    "ALTER ROLE {} PASSWORD {}",
                    quote_ident(&role),
                    quote_literal(&verifier)
                );
                sqlx::Executor::execute(&mut copy, sqlx::raw_sql(&sql)).await?;
            }
        }
        let _ = copy.close().await;
        Ok(())
    }

    /// See [`crate::DatabaseProvider::finish_reset`]: the endpoints
    /// pointed at the placement's leader, then the members it does not
    /// list drained and removed.
    pub(super) async fn finish_reset(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
    ) -> Result<()> {
        self.configure_leader(spec, placement)?;
        self.write_pooler_conf(spec, placement)?;
        self.write_router_conf(placement)?;
        for (_, port) in self.strays(placement) {
            let Some(port) = port else { continue };
            self.drain(placement, credentials, port).await;
        }
        self.remove_strays(placement).await;
        Ok(())
    }

    /// Waits (at most [`DRAIN_WITHIN`]) until the server on `port` runs no
    /// client's session but the host's own.
    async fn drain(&self, placement: &Placement, credentials: &Credentials, port: u16) {
        let Ok(mut admin) = self.admin_at(placement, credentials, port).await else {
            return;
        };
        let begun = tokio::time::Instant::now();
        while begun.elapsed() < DRAIN_WITHIN {
            let busy: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_catalog.pg_stat_activity \
                 WHERE backend_type = 'client backend' AND pid <> pg_catalog.pg_backend_pid() \
                 AND state IS DISTINCT FROM 'idle'",
            )
            .fetch_one(&mut admin)
            .await
            .unwrap_or(0);
            if busy == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let _ = admin.close().await;
    }

    /// The member directories of `placement`'s cluster it does not list,
    /// with the port each one's settings name.
    pub(super) fn strays(&self, placement: &Placement) -> Vec<(PathBuf, Option<u16>)> {
        let listed: HashSet<String> = placement.nodes().into_iter().map(|n| n.name).collect();
        let mut out = Vec::new();
        let entries = std::fs::read_dir(self.cluster_dir(&placement.cluster));
        for entry in entries.into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let member = name
                .strip_prefix("node")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            if !member || listed.contains(&name) {
                continue;
            }
            let port = std::fs::read_to_string(entry.path().join("data").join(conf::PG_CONF))
                .ok()
                .and_then(|text| {
                    text.lines()
                        .find_map(|l| l.strip_prefix("port = ")?.trim().parse().ok())
                });
            out.push((entry.path(), port));
        }
        out
    }

    /// Stops and removes every stray member of `placement`'s cluster and
    /// gives back its port.
    pub(super) async fn remove_strays(&self, placement: &Placement) {
        for (dir, port) in self.strays(placement) {
            let data = dir.join("data");
            if let Some(pid) = supervise::postgres_pid(&data) {
                // SIGINT: a fast shutdown.
                supervise::stop_pid(pid, Signal::SIGINT).await;
            }
            supervise::fence_postgres(&data).await;
            if let Err(e) = std::fs::remove_dir_all(&dir) {
                tracing::warn!(member = %dir.display(), error = %e, "removing a stray member");
                continue;
            }
            if let Some(port) = port
                && !placement.nodes().iter().any(|n| n.port == port)
            {
                self.ports.release(port);
            }
            tracing::info!(member = %dir.display(), "removed a member its cluster no longer lists");
        }
    }

    /// The timeline histories cluster `cluster` archived (shipped or still
    /// in its spool), with their text.
    async fn own_histories(&self, cluster: &str) -> Result<Vec<(String, Bytes)>> {
        let mut out = Vec::new();
        let store = &self.config.backups.store;
        for name in self.archived_wal(cluster).await? {
            if !name.ends_with(".history") {
                continue;
            }
            let text = store
                .get(&wal_key(cluster, &name))
                .await
                .map_err(|e| Error::Unavailable(format!("backup store: {e}")))?
                .bytes()
                .await
                .map_err(|e| Error::Unavailable(format!("backup store: {e}")))?;
            out.push((name, text));
        }
        let spool = std::fs::read_dir(self.spool_dir(cluster));
        for entry in spool.into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".history")
                && !out.iter().any(|(n, _)| *n == name)
                && let Ok(text) = std::fs::read(entry.path())
            {
                out.push((name, Bytes::from(text)));
            }
        }
        Ok(out)
    }
}
