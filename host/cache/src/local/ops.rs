//! The operations of the local provider that [`crate::CacheProvider`]
//! is made of (`provider`): creation, changes of
//! settings, passwords, snapshots, metrics and logs of the processes.

use std::time::Duration;

use bytes::Bytes;
use redis::aio::MultiplexedConnection;

use crate::client;
use crate::spec::{
    ClusterSpec, Credentials, LogLine, Metrics, Persistence, PlacedNode, Placement, USER,
};
use crate::{Error, Result};

use super::conf::{self, LOG_FILE, RDB_FILE};
use super::supervise::{self, start};
use super::{LocalProvider, SENTINELS, endpoint, tls};

/// How long a stopping process may take before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// How long a replica may take to finish its first sync.
const SYNC_WITHIN: Duration = Duration::from_secs(20);

impl LocalProvider {
    async fn admin_conn(
        &self,
        placement: &Placement,
        credentials: &Credentials,
        port: u16,
    ) -> Result<MultiplexedConnection> {
        let ca = self.ca_pem(placement)?;
        client::connect(&Self::admin(placement, ca.as_deref(), credentials, port)).await
    }

    /// The leader's port: the sentinels' answer, else the first node.
    async fn leader_port(&self, placement: &Placement, credentials: &Credentials) -> u16 {
        match self.current_leader(placement, credentials).await {
            Some((_, port)) => port,
            None => placement.nodes[0].port,
        }
    }

    /// Starts data node `index` (following `leader` if given) and waits
    /// until it answers.
    async fn start_node(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        index: usize,
        leader: Option<&(String, u16)>,
        credentials: &Credentials,
        load_seed: bool,
    ) -> Result<()> {
        self.write_data_conf(spec, placement, index, leader, credentials, load_seed)?;
        let node = &placement.nodes[index];
        let ca = self.ca_pem(placement)?;
        start(
            self,
            placement,
            &node.name,
            false,
            &Self::admin(placement, ca.as_deref(), credentials, node.port),
        )
        .await
    }

    async fn start_sentinel(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        sentinel: &PlacedNode,
        leader: (&str, u16),
        credentials: &Credentials,
    ) -> Result<()> {
        self.write_sentinel_conf(spec, placement, sentinel, leader, credentials)?;
        let ca = self.ca_pem(placement)?;
        start(
            self,
            placement,
            &sentinel.name,
            true,
            &Self::admin(placement, ca.as_deref(), credentials, sentinel.port),
        )
        .await
    }

    /// Waits until the replica on `port` has finished its sync.
    async fn wait_synced(
        &self,
        placement: &Placement,
        credentials: &Credentials,
        port: u16,
    ) -> Result<()> {
        let deadline = tokio::time::Instant::now() + SYNC_WITHIN;
        let mut conn = self.admin_conn(placement, credentials, port).await?;
        loop {
            let info = client::info(&mut conn, "replication").await?;
            if info.get("master_link_status").map(String::as_str) == Some("up") {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(Error::Unavailable(format!(
                    "the replica on port {port} did not sync with its leader"
                )));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Runs CONFIG SET with `pairs` on every data node that answers.
    async fn config_set_all(
        &self,
        placement: &Placement,
        credentials: &Credentials,
        pairs: &[(&str, String)],
    ) -> Result<()> {
        for node in &placement.nodes {
            let mut conn = self.admin_conn(placement, credentials, node.port).await?;
            let mut cmd = redis::cmd("CONFIG");
            cmd.arg("SET");
            for (k, v) in pairs {
                cmd.arg(*k).arg(v);
            }
            let () = cmd.query_async(&mut conn).await?;
        }
        Ok(())
    }

    async fn create_inner(
        &self,
        spec: &ClusterSpec,
        credentials: &Credentials,
        seed: Option<Bytes>,
        placement: &Placement,
    ) -> Result<()> {
        if spec.tls {
            tls::issue(&self.tls_dir(&spec.id), &spec.id, &self.config.address)?;
        }
        let seeded = seed.is_some();
        if let Some(rdb) = seed {
            let dir = self.process_dir(placement, &placement.nodes[0].name);
            std::fs::create_dir_all(&dir)?;
            std::fs::write(dir.join(RDB_FILE), &rdb)?;
        }
        self.start_node(spec, placement, 0, None, credentials, seeded)
            .await?;
        if seeded {
            let dir = self.process_dir(placement, &placement.nodes[0].name);
            // The seed is loaded; a leader without persistence must not
            // load it again on a restart.
            if spec.persistence != Persistence::Rdb {
                let _ = std::fs::remove_file(dir.join(RDB_FILE));
            }
            if spec.persistence == Persistence::Aof {
                let mut conn = self
                    .admin_conn(placement, credentials, placement.nodes[0].port)
                    .await?;
                let () = redis::cmd("CONFIG")
                    .arg("SET")
                    .arg("appendonly")
                    .arg("yes")
                    .query_async(&mut conn)
                    .await?;
            }
        }
        let leader = (placement.address.clone(), placement.nodes[0].port);
        for index in 1..placement.nodes.len() {
            self.start_node(spec, placement, index, Some(&leader), credentials, false)
                .await?;
        }
        for node in &placement.nodes[1..] {
            self.wait_synced(placement, credentials, node.port).await?;
        }
        for sentinel in &placement.sentinels {
            self.start_sentinel(
                spec,
                placement,
                sentinel,
                (&leader.0, leader.1),
                credentials,
            )
            .await?;
        }
        self.start_endpoint(placement, credentials, false).await?;
        Ok(())
    }

    async fn stop_all(&self, placement: &Placement) {
        self.stop_endpoint(placement, STOP_GRACE).await;
        for process in placement.sentinels.iter().chain(&placement.nodes) {
            supervise::stop(&self.process_dir(placement, &process.name), STOP_GRACE).await;
        }
    }
}

/// The last `lines` lines of a file.
fn tail(path: &std::path::Path, lines: usize) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..]
        .iter()
        .map(|l| (*l).to_owned())
        .collect()
}

/// The operations [`crate::CacheProvider`] is made of (`provider`).
impl LocalProvider {
    pub async fn create(
        &self,
        spec: &ClusterSpec,
        credentials: &Credentials,
        seed: Option<Bytes>,
    ) -> Result<Placement> {
        let mut placement = Placement {
            cluster: spec.id.clone(),
            address: self.config.address.clone(),
            master_name: format!("plateau-{}", spec.id),
            tls: spec.tls,
            nodes: Vec::new(),
            sentinels: Vec::new(),
            endpoint: None,
        };
        for i in 0..=spec.replicas as usize {
            placement.nodes.push(PlacedNode {
                name: format!("node{i}"),
                port: self.allocate_port(&placement.cluster)?,
            });
        }
        for i in 0..SENTINELS {
            placement.sentinels.push(PlacedNode {
                name: format!("sentinel{i}"),
                port: self.allocate_port(&placement.cluster)?,
            });
        }
        if spec.replicas > 0 {
            placement.endpoint = Some(PlacedNode {
                name: endpoint::DIR.to_owned(),
                port: self.allocate_port(&placement.cluster)?,
            });
        }
        if let Err(e) = self.create_inner(spec, credentials, seed, &placement).await {
            self.destroy(&placement).await?;
            return Err(e);
        }
        Ok(placement)
    }

    pub async fn update(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
    ) -> Result<Placement> {
        let mut pairs = vec![
            ("maxmemory", format!("{}mb", spec.memory_mb)),
            ("maxmemory-policy", spec.eviction_policy.as_str().to_owned()),
        ];
        for line in conf::persistence_lines(spec.persistence).lines() {
            if let Some((k, v)) = line.split_once(' ') {
                pairs.push(match k {
                    "save" => ("save", v.trim_matches('"').to_owned()),
                    "appendonly" => ("appendonly", v.to_owned()),
                    _ => ("appendfsync", v.to_owned()),
                });
            }
        }
        let mut next = placement.clone();
        let wanted = spec.replicas as usize + 1;
        let leader_port = self.leader_port(placement, credentials).await;
        let leader = (placement.address.clone(), leader_port);
        if spec.replicas == 0 {
            // The leader stops waiting for replicas before they go.
            self.config_set_all(placement, credentials, &conf::min_replicas(0))
                .await?;
        }
        // Fewer replicas: stop the last nodes that do not lead.
        while next.nodes.len() > wanted {
            let Some(pos) = next.nodes.iter().rposition(|n| n.port != leader_port) else {
                break;
            };
            let node = next.nodes.remove(pos);
            supervise::stop(&self.process_dir(placement, &node.name), STOP_GRACE).await;
            let _ = std::fs::remove_dir_all(self.process_dir(placement, &node.name));
            self.ports.release(node.port);
        }
        self.config_set_all(&next, credentials, &pairs).await?;
        // More replicas: start them following the leader.
        let mut added = Vec::new();
        while next.nodes.len() < wanted {
            let taken: Vec<&str> = next.nodes.iter().map(|n| n.name.as_str()).collect();
            let name = (0..)
                .map(|i| format!("node{i}"))
                .find(|n| !taken.contains(&n.as_str()))
                .expect("a free node name");
            next.nodes.push(PlacedNode {
                name,
                port: self.allocate_port(&next.cluster)?,
            });
            let index = next.nodes.len() - 1;
            self.start_node(spec, &next, index, Some(&leader), credentials, false)
                .await?;
            added.push(next.nodes[index].port);
        }
        for port in added {
            self.wait_synced(&next, credentials, port).await?;
        }
        if spec.replicas > 0 {
            // Once the replicas are in sync, the leader needs one to write.
            self.config_set_all(&next, credentials, &conf::min_replicas(spec.replicas))
                .await?;
        }
        if next.endpoint.is_none() && spec.replicas > 0 {
            next.endpoint = Some(PlacedNode {
                name: endpoint::DIR.to_owned(),
                port: self.allocate_port(&next.cluster)?,
            });
            self.start_endpoint(&next, credentials, false).await?;
        } else if next.nodes != placement.nodes {
            // The endpoint takes over with the new list of nodes.
            self.start_endpoint(&next, credentials, true).await?;
        }
        if next.nodes.len() != placement.nodes.len() {
            // The sentinels forget removed replicas and learn new ones.
            for sentinel in &next.sentinels {
                if let Ok(mut conn) = self.admin_conn(&next, credentials, sentinel.port).await {
                    let _: redis::RedisResult<i64> = redis::cmd("SENTINEL")
                        .arg("RESET")
                        .arg(&next.master_name)
                        .query_async(&mut conn)
                        .await;
                }
            }
        }
        Ok(next)
    }

    pub async fn set_password(
        &self,
        placement: &Placement,
        credentials: &Credentials,
    ) -> Result<()> {
        let app = format!("#{}", conf::hash(&credentials.password));
        let reader = conf::hash(&credentials.reader_password());
        let processes = placement.nodes.iter().map(|n| (n, true));
        let processes = processes.chain(placement.sentinels.iter().map(|s| (s, false)));
        for (process, data_node) in processes {
            let mut conn = self
                .admin_conn(placement, credentials, process.port)
                .await?;
            let () = redis::cmd("ACL")
                .arg("SETUSER")
                .arg(USER)
                .arg("resetpass")
                .arg(&app)
                .query_async(&mut conn)
                .await?;
            let () = redis::cmd("ACL")
                .arg(conf::reader_setuser(data_node, &reader))
                .query_async(&mut conn)
                .await?;
            if data_node {
                let () = redis::cmd("ACL").arg("SAVE").query_async(&mut conn).await?;
            }
        }
        Ok(())
    }

    pub async fn destroy(&self, placement: &Placement) -> Result<()> {
        self.stop_all(placement).await;
        let dir = self.cluster_dir(&placement.cluster);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
        self.release(placement);
        let _one = self.users.lock().await;
        if let Err(e) = super::user::remove(&placement.cluster).await {
            // The data is gone; a user left behind owns nothing.
            tracing::warn!(cache = %placement.cluster, error = %e, "removing a cache's user");
        }
        Ok(())
    }

    pub async fn leader(&self, placement: &Placement, credentials: &Credentials) -> Result<String> {
        let port = self.leader_port(placement, credentials).await;
        Ok(format!("{}:{port}", placement.address))
    }

    pub async fn metrics(
        &self,
        placement: &Placement,
        credentials: &Credentials,
    ) -> Result<Metrics> {
        let port = self.leader_port(placement, credentials).await;
        let mut conn = self.admin_conn(placement, credentials, port).await?;
        let info = client::info(&mut conn, "all").await?;
        let n = |name| client::number(&info, name);
        Ok(Metrics {
            used_memory_bytes: n("used_memory"),
            maxmemory_bytes: n("maxmemory"),
            keys: client::keys(&info),
            keyspace_hits: n("keyspace_hits"),
            keyspace_misses: n("keyspace_misses"),
            evicted_keys: n("evicted_keys"),
            expired_keys: n("expired_keys"),
            connected_clients: n("connected_clients"),
            connected_replicas: n("connected_slaves"),
            replication_offset: n("master_repl_offset"),
            uptime_seconds: n("uptime_in_seconds"),
        })
    }

    pub async fn logs(&self, placement: &Placement, lines: usize) -> Result<Vec<LogLine>> {
        let mut out = Vec::new();
        for process in placement.nodes.iter().chain(&placement.sentinels) {
            let path = self.process_dir(placement, &process.name).join(LOG_FILE);
            out.extend(tail(&path, lines).into_iter().map(|line| LogLine {
                process: process.name.clone(),
                line,
            }));
        }
        Ok(out)
    }

    pub async fn snapshot(
        &self,
        placement: &Placement,
        credentials: &Credentials,
    ) -> Result<Bytes> {
        let _one = self.snapshot_lock.lock().await;
        let port = self.leader_port(placement, credentials).await;
        let dir = self.node_dir_by_port(placement, port)?;
        let mut conn = self.admin_conn(placement, credentials, port).await?;
        let before = client::number(&client::info(&mut conn, "persistence").await?, "rdb_saves");
        let _: String = redis::cmd("BGSAVE")
            .arg("SCHEDULE")
            .query_async(&mut conn)
            .await?;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        loop {
            let info = client::info(&mut conn, "persistence").await?;
            let done = client::number(&info, "rdb_saves") > before
                && client::number(&info, "rdb_bgsave_in_progress") == 0;
            if done {
                if info.get("rdb_last_bgsave_status").map(String::as_str) != Some("ok") {
                    return Err(Error::Unavailable(
                        "the cache could not write its snapshot; see its logs".to_owned(),
                    ));
                }
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(Error::Unavailable(
                    "the snapshot did not finish within 120 s; try again".to_owned(),
                ));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let path = dir.join(RDB_FILE);
        let bytes = tokio::fs::read(&path).await?;
        let rdb_persistence = std::fs::read_to_string(dir.join(conf::CONF_FILE))
            .map(|c| c.lines().any(|l| l.starts_with("save 3600")))
            .unwrap_or(false);
        if !rdb_persistence {
            // Without RDB persistence a restart must not load it.
            let _ = std::fs::remove_file(&path);
        }
        Ok(Bytes::from(bytes))
    }

    /// Replaces the leader's keys with the snapshot's (replicas follow).
    pub async fn restore(
        &self,
        placement: &Placement,
        credentials: &Credentials,
        rdb: Bytes,
    ) -> Result<()> {
        let port = self.leader_port(placement, credentials).await;
        let leader = self.admin_conn(placement, credentials, port).await?;
        super::restore::replace(self, placement, leader, rdb).await
    }

    pub fn ca_certificate(&self, placement: &Placement) -> Result<Option<String>> {
        self.ca_pem(placement)
    }

    pub async fn supervise(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
    ) -> Result<bool> {
        supervise::supervise(self, spec, placement, credentials).await
    }
}
