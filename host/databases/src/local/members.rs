//! The members of a local cluster: standbys made with the low-level backup
//! API (no `pg_basebackup` ships with the npm builds), the settings files
//! that say who leads and who follows, the pooler pointed at the leader
//! (and its read database at a replica), scaling, and one supervision
//! round over every member.

use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

use nix::sys::signal::Signal;
use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection};

use super::users::Owner;
use super::{LocalProvider, conf, supervise};
use crate::spec::{ADMIN_ROLE, ClusterSpec, Credentials, Member, Node, Placement};
use crate::{Error, FAILOVER_AFTER, Result, Supervised};

/// Files of a data directory a copy leaves behind: the running server's,
/// and those a standby writes itself.
pub(super) const SKIP_FILES: [&str; 9] = [
    "postmaster.pid",
    "postmaster.opts",
    "backup_label",
    "backup_label.old",
    "tablespace_map",
    "standby.signal",
    "recovery.signal",
    "current_logfiles",
    conf::PG_CONF,
];

/// Directories whose contents a copy leaves behind (the standby streams
/// the WAL through its slot; the rest is rebuilt at start).
pub(super) const EMPTY_DIRS: [&str; 8] = [
    "pg_wal",
    "pg_replslot",
    "pg_dynshmem",
    "pg_notify",
    "pg_serial",
    "pg_snapshots",
    "pg_stat_tmp",
    "pg_subtrans",
];

/// Makes the physical replication slot `$1` unless it exists.
pub(super) const CREATE_SLOT: &str = "SELECT pg_catalog.pg_create_physical_replication_slot($1, true) \
     WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_replication_slots WHERE slot_name = $1)";

impl LocalProvider {
    /// A superuser connection to the `postgres` database of the member on
    /// `port`.
    pub(super) async fn admin_at(
        &self,
        placement: &Placement,
        credentials: &Credentials,
        port: u16,
    ) -> Result<PgConnection> {
        let options = PgConnectOptions::new()
            .host(&placement.address)
            .port(port)
            .username(ADMIN_ROLE)
            .password(&credentials.admin_password)
            .database("postgres")
            .application_name("plateau");
        let options = crate::host_session::pin(options);
        Ok(PgConnection::connect_with(&options).await?)
    }

    /// Whether standby `node` holds logical slot `slot` synchronized from
    /// the leader and persistent (a slot still temporary there, not yet
    /// caught up, would be dropped by a promotion).
    pub(super) async fn synced_slot(
        &self,
        placement: &Placement,
        credentials: &Credentials,
        node: &Node,
        slot: &str,
    ) -> bool {
        let Ok(mut conn) = self.admin_at(placement, credentials, node.port).await else {
            return false;
        };
        let kept: Result<Option<bool>, sqlx::Error> = sqlx::query_scalar(
            "SELECT synced AND NOT temporary FROM pg_catalog.pg_replication_slots \
             WHERE slot_name OPERATOR(pg_catalog.=) $1",
        )
        .bind(slot)
        .fetch_optional(&mut conn)
        .await;
        let _ = conn.close().await;
        matches!(kept, Ok(Some(true)))
    }

    /// Whether member `node`'s postmaster lives and accepts connections.
    pub(super) async fn answers(&self, placement: &Placement, node: &Node) -> bool {
        supervise::postgres_pid(&self.data_dir(&placement.cluster, &node.name)).is_some()
            && tokio::net::TcpStream::connect((placement.address.as_str(), node.port))
                .await
                .is_ok()
    }

    /// Writes a file only if its text changes; whether it changed.
    pub(super) fn write_if_changed(&self, path: &Path, text: &str) -> Result<bool> {
        if std::fs::read_to_string(path).ok().as_deref() == Some(text) {
            return Ok(false);
        }
        self.write_private(path, text)?;
        Ok(true)
    }

    /// The leader's settings with synchronous commit to its live standbys;
    /// reloaded when they change.
    pub(super) fn configure_leader(&self, spec: &ClusterSpec, placement: &Placement) -> Result<()> {
        let live: Vec<String> = placement
            .standbys()
            .into_iter()
            .filter(|n| {
                supervise::postgres_pid(&self.data_dir(&placement.cluster, &n.name)).is_some()
            })
            .map(|n| n.name)
            .collect();
        let data = self.data_dir(&placement.cluster, &placement.leader);
        let text = conf::postgres(spec, &placement.address, placement.port)
            + &conf::leader(&spec.version, &live);
        if self.write_if_changed(&data.join(conf::PG_CONF), &text)?
            && let Some(pid) = supervise::postgres_pid(&data)
        {
            signal(pid, Signal::SIGHUP);
        }
        Ok(())
    }

    /// Points the standby `node` at the leader; reloaded when it changes.
    pub(super) fn configure_standby(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
        node: &Node,
    ) -> Result<()> {
        let data = self.data_dir(&placement.cluster, &node.name);
        let text = conf::postgres(spec, &placement.address, node.port)
            + &conf::standby(
                &spec.version,
                &node.name,
                &placement.address,
                placement.port,
                &credentials.admin_password,
            );
        if self.write_if_changed(&data.join(conf::PG_CONF), &text)?
            && let Some(pid) = supervise::postgres_pid(&data)
        {
            signal(pid, Signal::SIGHUP);
        }
        Ok(())
    }

    /// pgbouncer's settings: `*` to the leader, the read database to the
    /// first live standby (the leader when none lives); reloaded when they
    /// change.
    pub(super) fn write_pooler_conf(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
    ) -> Result<()> {
        let read = if placement.standbys().is_empty() {
            None
        } else {
            Some(
                placement
                    .standbys()
                    .into_iter()
                    .find(|n| {
                        supervise::postgres_pid(&self.data_dir(&placement.cluster, &n.name))
                            .is_some()
                    })
                    .map_or(placement.port, |n| n.port),
            )
        };
        let dir = self.pooler_dir(&placement.cluster);
        let key = self.pooler_key(&dir)?;
        let tls = self.tls_dir(&placement.cluster);
        let text = conf::pooler(
            spec,
            &dir,
            &placement.address,
            placement.pooler_port,
            (&placement.database, placement.port, read),
            &key,
            tls.join(super::tls::KEY_FILE)
                .exists()
                .then_some(tls.as_path()),
        );
        if self.write_if_changed(&dir.join(conf::POOLER_CONF), &text)?
            && let Some(pid) = supervise::pooler_pid(&dir)
        {
            signal(pid, Signal::SIGHUP);
        }
        Ok(())
    }

    /// The pooler's [`conf::POOLER_KEY`], made at its first use.
    fn pooler_key(&self, dir: &Path) -> Result<String> {
        let path = dir.join(conf::POOLER_KEY);
        if let Ok(key) = std::fs::read_to_string(&path)
            && !key.trim().is_empty()
        {
            return Ok(key.trim().to_owned());
        }
        let key: String = (0..32)
            .map(|_| char::from_digit(rand::random_range(0..16u32), 16).unwrap_or('0'))
            .collect();
        self.write_private(&path, &key)?;
        Ok(key)
    }

    /// Makes member `node` a hot standby of the leader: its own physical
    /// replication slot, then a copy of the leader's data directory between
    /// `pg_backup_start` and `pg_backup_stop` on one connection, the
    /// backup label, `standby.signal`, and its start.
    pub(super) async fn make_standby(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
        node: &Node,
    ) -> Result<()> {
        let bin = self.bin(&spec.version)?;
        let node_dir = self.cluster_dir(&placement.cluster).join(&node.name);
        let data = node_dir.join("data");
        if let Some(pid) = supervise::postgres_pid(&data) {
            supervise::stop_pid(pid, Signal::SIGQUIT).await;
        }
        if node_dir.exists() {
            std::fs::remove_dir_all(&node_dir)?;
        }
        self.mkdir(&node_dir)?;
        let source = self.data_dir(&placement.cluster, &placement.leader);
        let mut leader = self
            .admin_at(placement, credentials, placement.port)
            .await?;
        sqlx::query(
            "SELECT pg_catalog.pg_drop_replication_slot(slot_name) \
             FROM pg_catalog.pg_replication_slots WHERE slot_name = $1 AND NOT active",
        )
        .bind(&node.name)
        .execute(&mut leader)
        .await?;
        sqlx::query(CREATE_SLOT)
            .bind(&node.name)
            .execute(&mut leader)
            .await?;
        sqlx::query("SELECT pg_catalog.pg_backup_start($1, true)")
            .bind(format!("plateau {}", node.name))
            .execute(&mut leader)
            .await?;
        let owner = if self.root {
            super::users::owner_of(&node_dir)
        } else {
            None
        };
        let (from, to) = (source.clone(), data.clone());
        let copied = tokio::task::spawn_blocking(move || copy_data(&from, &to, owner.as_ref()))
            .await
            .map_err(|e| Error::Internal(e.to_string()))?;
        let (label, map): (String, String) =
            sqlx::query_as("SELECT labelfile, spcmapfile FROM pg_catalog.pg_backup_stop(true)")
                .fetch_one(&mut leader)
                .await?;
        leader.close().await?;
        copied?;
        self.write_private(&data.join("backup_label"), &label)?;
        if !map.trim().is_empty() {
            self.write_private(&data.join("tablespace_map"), &map)?;
        }
        self.write_private(&data.join("standby.signal"), "")?;
        self.configure_standby(spec, placement, credentials, node)?;
        let user = self.user_of(&placement.cluster);
        supervise::start_postgres(user.as_deref(), &bin, &data).await
    }

    /// Stops the standby `member` and makes it again from the leader.
    pub(super) async fn rebuild_standby(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
        member: &str,
    ) -> Result<()> {
        if member == placement.leader {
            // The leader restarts on its new settings.
            let data = self.data_dir(&placement.cluster, member);
            self.configure_leader(spec, placement)?;
            let user = self.user_of(&placement.cluster);
            let mut restart =
                supervise::command(user.as_deref(), &self.bin(&spec.version)?.join("pg_ctl"));
            restart
                .arg("-D")
                .arg(&data)
                .arg("-l")
                .arg(data.with_file_name(conf::LOG_FILE))
                .args(["-m", "fast", "-w", "restart"]);
            supervise::run(restart, "pg_ctl restart").await?;
            return Ok(());
        }
        let node = placement
            .standbys()
            .into_iter()
            .find(|n| n.name == member)
            .ok_or_else(|| Error::Missing(format!("no replica {member} in this database")))?;
        self.make_standby(spec, placement, credentials, &node)
            .await?;
        self.configure_leader(spec, placement)?;
        self.write_pooler_conf(spec, placement)
    }

    /// Adds standbys (named after the highest member) or removes the
    /// newest until there are `replicas`.
    pub(super) async fn scale_members(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
        replicas: u32,
    ) -> Result<Placement> {
        let mut placement = placement.clone();
        placement.members = placement.nodes();
        while placement.standbys().len() < replicas as usize {
            let next = placement
                .members
                .iter()
                .filter_map(|n| n.name.strip_prefix("node")?.parse::<u32>().ok())
                .max()
                .map_or(0, |n| n + 1);
            let node = Node {
                name: format!("node{next}"),
                port: self.allocate_port(&placement.cluster)?,
            };
            placement.members.push(node.clone());
            if let Err(e) = self
                .make_standby(spec, &placement, credentials, &node)
                .await
            {
                placement.members.retain(|n| n.name != node.name);
                self.remove_member(&placement, credentials, &node).await;
                return Err(e);
            }
        }
        while placement.standbys().len() > replicas as usize {
            let mut standbys = placement.standbys();
            standbys.sort_by_key(|n| {
                n.name
                    .strip_prefix("node")
                    .and_then(|n| n.parse::<u32>().ok())
            });
            let Some(node) = standbys.pop() else { break };
            placement.members.retain(|n| n.name != node.name);
            // The leader stops waiting for it before it goes.
            self.configure_leader(spec, &placement)?;
            self.remove_member(&placement, credentials, &node).await;
        }
        self.configure_leader(spec, &placement)?;
        self.write_pooler_conf(spec, &placement)?;
        Ok(placement)
    }

    /// Stops a member that left the cluster, drops its slot on the leader,
    /// removes its files and gives back its port.
    async fn remove_member(&self, placement: &Placement, credentials: &Credentials, node: &Node) {
        let dir = self.cluster_dir(&placement.cluster).join(&node.name);
        if let Some(pid) = supervise::postgres_pid(&dir.join("data")) {
            supervise::stop_pid(pid, Signal::SIGQUIT).await;
        }
        if let Ok(mut leader) = self.admin_at(placement, credentials, placement.port).await {
            let _ = sqlx::query(
                "SELECT pg_catalog.pg_drop_replication_slot(slot_name) \
                 FROM pg_catalog.pg_replication_slots WHERE slot_name = $1 AND NOT active",
            )
            .bind(&node.name)
            .execute(&mut leader)
            .await;
        }
        let _ = std::fs::remove_dir_all(&dir);
        self.ports.release(node.port);
    }

    /// Every member with its role, state and lag behind the leader.
    pub(super) async fn member_states(
        &self,
        placement: &Placement,
        credentials: &Credentials,
    ) -> Vec<Member> {
        let leader = placement.leader_node();
        let leader_up = self.answers(placement, &leader).await;
        let mut replication: Vec<(String, String, Option<i64>)> = Vec::new();
        if leader_up
            && !placement.standbys().is_empty()
            && let Ok(mut c) = self.admin_at(placement, credentials, leader.port).await
        {
            replication = sqlx::query_as(
                "SELECT application_name::pg_catalog.text, state::pg_catalog.text, \
                 pg_catalog.pg_wal_lsn_diff(pg_catalog.pg_current_wal_lsn(), replay_lsn)::pg_catalog.int8 \
                 FROM pg_catalog.pg_stat_replication",
            )
            .fetch_all(&mut c)
            .await
            .unwrap_or_default();
            let _ = c.close().await;
        }
        let mut out = Vec::new();
        for node in placement.nodes() {
            let healthy = self.answers(placement, &node).await;
            let is_leader = node.name == placement.leader;
            let streaming = replication.iter().find(|(name, ..)| *name == node.name);
            let state = match (is_leader, healthy, streaming) {
                (_, false, _) => "down",
                (true, true, _) => "running",
                (false, true, Some((_, state, _))) if state == "streaming" => "streaming",
                (false, true, _) => "starting",
            };
            out.push(Member {
                name: node.name.clone(),
                role: if is_leader { "leader" } else { "replica" }.to_owned(),
                state: state.to_owned(),
                port: node.port,
                healthy,
                lag_bytes: if is_leader {
                    None
                } else {
                    streaming.and_then(|(.., lag)| lag.map(|l| l.max(0) as u64))
                },
            });
        }
        out
    }

    /// One round: the leader (fail over when it is gone and a standby
    /// lives, start it otherwise), then each standby (start it, or make it
    /// again when it cannot follow), then the settings and the pooler.
    pub(super) async fn supervise_members(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
    ) -> Result<Supervised> {
        let bin = self.bin(&spec.version)?;
        self.move_to_own_user(spec, placement).await?;
        let user = self.user_of(&placement.cluster);
        let user = user.as_deref();
        let mut out = Supervised {
            healthy: true,
            placement: None,
            failover: None,
        };
        let leader_data = self.data_dir(&placement.cluster, &placement.leader);
        if !leader_data.exists() {
            out.healthy = false;
            return Ok(out);
        }
        let mut placement = placement.clone();
        let alive = supervise::postgres_pid(&leader_data).is_some();
        let answers = alive && self.answers(&placement, &placement.leader_node()).await;
        let since = {
            let mut unreachable = self.unreachable.lock().unwrap_or_else(|e| e.into_inner());
            if answers {
                unreachable.remove(&placement.cluster);
                None
            } else {
                Some(
                    *unreachable
                        .entry(placement.cluster.clone())
                        .or_insert_with(std::time::Instant::now),
                )
            }
        };
        if let Some(since) = since {
            let gone = !alive || since.elapsed() >= FAILOVER_AFTER;
            let mut promoted = None;
            if gone && !placement.standbys().is_empty() {
                match self
                    .switch_leader(spec, &placement, credentials, None)
                    .await
                {
                    Ok(new) => promoted = Some(new),
                    Err(e) => {
                        tracing::warn!(database = %placement.cluster, error = %e, "failing over")
                    }
                }
            }
            if let Some(new) = promoted {
                tracing::warn!(database = %placement.cluster, from = %placement.leader, to = %new.leader, "failed over");
                self.unreachable
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&placement.cluster);
                out.failover = Some((placement.leader.clone(), new.leader.clone()));
                out.placement = Some(new.clone());
                placement = new;
            } else if !alive {
                tracing::warn!(database = %placement.cluster, "the leader is down; starting it");
                if let Err(e) = supervise::start_postgres(user, &bin, &leader_data).await {
                    tracing::warn!(database = %placement.cluster, error = %e, "starting the leader");
                    out.healthy = false;
                }
            } else {
                out.healthy = false;
            }
        }
        for node in placement.standbys() {
            if out
                .failover
                .as_ref()
                .is_some_and(|(old, _)| *old == node.name)
            {
                // Made again next round, once the new leader is kept.
                continue;
            }
            let data = self.data_dir(&placement.cluster, &node.name);
            if supervise::postgres_pid(&data).is_some() {
                self.configure_standby(spec, &placement, credentials, &node)?;
                continue;
            }
            let started = if data.join("standby.signal").exists() {
                self.configure_standby(spec, &placement, credentials, &node)?;
                supervise::start_postgres(user, &bin, &data).await
            } else {
                Err(Error::Unavailable("not a standby".to_owned()))
            };
            if started.is_err() {
                // A former leader, or a standby that cannot start: made
                // again from the leader.
                tracing::warn!(database = %placement.cluster, member = %node.name, "making a replica again");
                if let Err(e) = self
                    .make_standby(spec, &placement, credentials, &node)
                    .await
                {
                    tracing::warn!(database = %placement.cluster, member = %node.name, error = %e, "making a replica");
                    out.healthy = false;
                }
            }
        }
        self.configure_leader(spec, &placement)?;
        self.write_pooler_conf(spec, &placement)?;
        let pooler = self.pooler_dir(&placement.cluster);
        if supervise::pooler_pid(&pooler).is_none() {
            tracing::warn!(database = %placement.cluster, "the pooler is down; starting it");
            if let Err(e) = supervise::start_pooler(
                user,
                &self.config.pgbouncer,
                &pooler,
                &placement.address,
                placement.pooler_port,
            )
            .await
            {
                tracing::warn!(database = %placement.cluster, error = %e, "starting the pooler");
                out.healthy = false;
            }
        }
        if placement.router_port.is_none() {
            // A cluster placed before write endpoints existed gets one.
            placement.router_port = Some(self.allocate_port(&placement.cluster)?);
            out.placement = Some(placement.clone());
        }
        match self.ensure_router(&placement, user).await {
            Ok(true) => {
                tracing::warn!(database = %placement.cluster, "the write endpoint was down; started it")
            }
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(database = %placement.cluster, error = %e, "starting the write endpoint");
                out.healthy = false;
            }
        }
        Ok(out)
    }
}

pub(super) fn signal(pid: i32, signal: Signal) {
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal);
}

/// Copies a running server's data directory for a base backup: files that
/// vanish meanwhile are skipped, [`SKIP_FILES`] and the contents of
/// [`EMPTY_DIRS`] stay behind; owned by `chown` when given.
fn copy_data(from: &Path, to: &Path, chown: Option<&Owner>) -> Result<()> {
    fn give(path: &Path, chown: Option<&Owner>) -> Result<()> {
        if let Some(o) = chown {
            std::os::unix::fs::chown(path, Some(o.uid), Some(o.gid))?;
        }
        Ok(())
    }
    fn mkdir(dir: &Path, chown: Option<&Owner>) -> Result<()> {
        std::fs::DirBuilder::new().mode(0o700).create(dir)?;
        give(dir, chown)
    }
    fn walk(from: &Path, to: &Path, depth: usize, chown: Option<&Owner>) -> Result<()> {
        mkdir(to, chown)?;
        let name = to.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if depth == 1 && EMPTY_DIRS.contains(&name) {
            if name == "pg_wal" {
                mkdir(&to.join("archive_status"), chown)?;
            }
            return Ok(());
        }
        for entry in std::fs::read_dir(from)? {
            let entry = match entry {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e.into()),
            };
            let file = entry.file_name();
            let file = file.to_string_lossy();
            if (depth == 0 && SKIP_FILES.contains(&file.as_ref())) || file.starts_with("pgsql_tmp")
            {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let target = to.join(entry.file_name());
            if kind.is_dir() {
                match walk(&entry.path(), &target, depth + 1, chown) {
                    Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {}
                    other => other?,
                }
            } else if kind.is_file() {
                match std::fs::copy(entry.path(), &target) {
                    Ok(_) => give(&target, chown)?,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(())
    }
    walk(from, to, 0, chown)
}
