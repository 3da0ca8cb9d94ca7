//! Leadership changes of a local cluster. A failover fences the old
//! leader (SIGKILL to every process in its data directory), promotes the
//! standby that received the most WAL (with synchronous commit to any one
//! standby, it holds every acknowledged commit), gives the other standbys
//! a slot on it and points them at it, and points the pooler and the write
//! endpoint at it. A switchover stops the old leader cleanly first,
//! promotes the chosen standby, and makes the old leader its standby. The
//! dead member of a failover is made again as a standby by the next
//! supervision round.

use sqlx::Connection;

use super::{LocalProvider, supervise};
use crate::spec::{ClusterSpec, Credentials, Node, Placement};
use crate::{Error, Result};

impl LocalProvider {
    /// Moves the leadership to `to`, or on a failover (`None`) to the most
    /// advanced live standby; the new placement.
    pub(super) async fn switch_leader(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
        to: Option<&str>,
    ) -> Result<Placement> {
        let old = placement.leader_node();
        let old_data = self.data_dir(&placement.cluster, &old.name);
        let (chosen, leads) = match to {
            Some(name) => {
                let node = placement
                    .standbys()
                    .into_iter()
                    .find(|n| n.name == name)
                    .ok_or_else(|| Error::Missing(format!("no replica {name} in this database")))?;
                if !self.answers(placement, &node).await {
                    return Err(Error::Unavailable(format!(
                        "replica {name} is down; wait for it to come back"
                    )));
                }
                // A clean stop sends every record to the standbys first.
                let user = self.user_of(&placement.cluster);
                let mut stop =
                    supervise::command(user.as_deref(), &self.bin(&spec.version)?.join("pg_ctl"));
                stop.arg("-D")
                    .arg(&old_data)
                    .args(["-m", "fast", "-w", "stop"]);
                if let Err(e) = supervise::run(stop, "pg_ctl stop").await {
                    tracing::warn!(database = %placement.cluster, error = %e, "stopping the leader");
                }
                (node, false)
            }
            None => {
                // Fence the old leader, and what runs on after its
                // postmaster, before anyone else leads.
                supervise::fence_postgres(&old_data).await;
                self.most_advanced(placement, credentials)
                    .await
                    .ok_or_else(|| Error::Unavailable("no live replica to promote".to_owned()))?
            }
        };

        let mut promoted = self.admin_at(placement, credentials, chosen.port).await?;
        let done: bool = leads
            || sqlx::query_scalar("SELECT pg_catalog.pg_promote(true, 60)")
                .fetch_one(&mut promoted)
                .await?;
        if !done {
            return Err(Error::Unavailable(format!(
                "replica {} did not finish its promotion within 60 s",
                chosen.name
            )));
        }
        let mut new = placement.clone();
        new.members = placement.nodes();
        new.leader = chosen.name.clone();
        new.port = chosen.port;

        // Slots on the new leader for the others, then point them at it.
        for node in new.standbys() {
            sqlx::query(super::members::CREATE_SLOT)
                .bind(&node.name)
                .execute(&mut promoted)
                .await?;
        }
        let _ = promoted.close().await;
        self.configure_leader(spec, &new)?;
        for node in new.standbys() {
            if node.name != old.name {
                self.configure_standby(spec, &new, credentials, &node)?;
            }
        }
        // Every endpoint follows: `uri` and `readUri` (pgbouncer) and
        // `writeUri` (the router).
        self.write_pooler_conf(spec, &new)?;
        self.write_router_conf(&new)?;
        if to.is_some() {
            self.make_standby(spec, &new, credentials, &old).await?;
            self.configure_leader(spec, &new)?;
            self.write_pooler_conf(spec, &new)?;
        }
        Ok(new)
    }

    /// The live standby that received the most WAL; or, first, one that
    /// leads already (`true`): promoted by a failover whose new placement
    /// the store did not keep, it is the leader to keep, never a second
    /// one to promote beside.
    async fn most_advanced(
        &self,
        placement: &Placement,
        credentials: &Credentials,
    ) -> Option<(Node, bool)> {
        let mut best: Option<(i64, Node)> = None;
        for node in placement.standbys() {
            if supervise::postgres_pid(&self.data_dir(&placement.cluster, &node.name)).is_none() {
                continue;
            }
            let Ok(mut c) = self.admin_at(placement, credentials, node.port).await else {
                continue;
            };
            let state: Option<(bool, Option<i64>)> = sqlx::query_as(
                "SELECT pg_catalog.pg_is_in_recovery(), \
                 pg_catalog.pg_wal_lsn_diff(GREATEST(pg_catalog.pg_last_wal_receive_lsn(), \
                 pg_catalog.pg_last_wal_replay_lsn()), '0/0')::pg_catalog.int8",
            )
            .fetch_one(&mut c)
            .await
            .ok();
            let _ = c.close().await;
            let Some((recovering, lsn)) = state else {
                continue;
            };
            if !recovering {
                return Some((node, true));
            }
            let lsn = lsn.unwrap_or(0);
            if best.as_ref().is_none_or(|(b, _)| lsn > *b) {
                best = Some((lsn, node));
            }
        }
        best.map(|(_, node)| (node, false))
    }
}
