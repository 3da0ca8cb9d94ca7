//! The local provider: each cluster is real `redis-server` processes on
//! this host (a leader, its replicas, three sentinels), on ports the host
//! allocates, with their files under `<data dir>/caches/<cluster id>/`:
//! `tls/` (the cluster's CA and server certificate), and one directory per
//! process (`node0`, `node1`, ..., `sentinel0`, ..., and `endpoint`, the
//! HAProxy that leads to the leader of a cluster with replicas). The processes run as
//! the cluster's own unprivileged user (`user`), which owns that directory.

mod conf;
pub mod endpoint;
mod ops;
mod provider;
mod restore;
pub mod supervise;
pub mod tls;
pub mod user;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::client::Target;
use crate::spec::{ADMIN_USER, ClusterSpec, Credentials, PlacedNode, Placement};
use crate::{Error, Result};

pub use conf::DOWN_AFTER_MS;

/// Sentinels per cluster; two of them make a quorum.
pub const SENTINELS: usize = 3;

/// Settings of the local provider.
#[derive(Clone, Debug)]
pub struct LocalConfig {
    /// `<data dir>/caches`.
    pub root: PathBuf,
    /// The address processes listen on and clients connect to.
    pub address: String,
    /// The `redis-server` binary (also run as a sentinel).
    pub redis_server: PathBuf,
    /// The `haproxy` binary: the stable endpoint of clusters with replicas.
    pub haproxy: PathBuf,
}

pub struct LocalProvider {
    config: LocalConfig,
    /// The ports of this host's clusters, claimed in `<root>/.ports`: a
    /// new cluster never takes the port of a process that is down for a
    /// moment, nor does a client's connection (see [`plateau_kernel::Ports`]).
    ports: plateau_kernel::Ports,
    /// One snapshot at a time: BGSAVE writes the node's one RDB file.
    snapshot_lock: tokio::sync::Mutex<()>,
    /// One change of the system's users at a time.
    users: tokio::sync::Mutex<()>,
    /// Clusters whose ACL users this host has brought up to date since it
    /// started (clusters made by an older version lack the read-only one).
    acl_current: Mutex<std::collections::HashSet<String>>,
}

impl LocalProvider {
    /// The provider over `config.root`, which the clusters' users may
    /// then reach.
    pub fn new(config: LocalConfig) -> Result<Self> {
        std::fs::create_dir_all(&config.root)?;
        user::open_path(&config.root)?;
        Ok(LocalProvider {
            ports: plateau_kernel::Ports::new(config.root.join(".ports"), &config.address),
            config,
            snapshot_lock: tokio::sync::Mutex::new(()),
            users: tokio::sync::Mutex::new(()),
            acl_current: Mutex::new(std::collections::HashSet::new()),
        })
    }

    /// The user `cluster`'s processes run as, made if needed (`None`: the
    /// host's own user, when it is not root).
    pub async fn process_user(&self, cluster: &str) -> Result<Option<plateau_os_user::OsUser>> {
        let _one = self.users.lock().await;
        user::ensure(cluster).await
    }

    pub fn bin(&self) -> &Path {
        &self.config.redis_server
    }

    pub(crate) fn cluster_dir(&self, cluster: &str) -> PathBuf {
        self.config.root.join(cluster)
    }

    pub fn process_dir(&self, placement: &Placement, process: &str) -> PathBuf {
        self.cluster_dir(&placement.cluster).join(process)
    }

    pub(crate) fn tls_dir(&self, cluster: &str) -> PathBuf {
        self.cluster_dir(cluster).join("tls")
    }

    /// The cluster's CA certificate, `None` without TLS.
    pub fn ca_pem(&self, placement: &Placement) -> Result<Option<String>> {
        if !placement.tls {
            return Ok(None);
        }
        Ok(Some(std::fs::read_to_string(
            self.tls_dir(&placement.cluster).join(tls::CA_FILE),
        )?))
    }

    /// Claims the ports of a known cluster (adoption after a restart).
    pub fn reserve(&self, placement: &Placement) {
        self.ports.reserve(&placement.cluster, ports_of(placement));
    }

    /// Gives back every port of a cluster that is gone, placed or not.
    fn release(&self, placement: &Placement) {
        for port in ports_of(placement) {
            self.ports.release(port);
        }
        self.ports.release_owner(&placement.cluster);
    }

    /// A free port that no cluster of this host holds, claimed for
    /// `cluster`.
    pub(crate) fn allocate_port(&self, cluster: &str) -> Result<u16> {
        self.ports
            .allocate(cluster)
            .map_err(|e| Error::Unavailable(format!("no port for a cache process: {e}")))
    }

    /// The host's own connection target for a port of the cluster.
    fn admin<'a>(
        placement: &'a Placement,
        ca: Option<&'a str>,
        credentials: &'a Credentials,
        port: u16,
    ) -> Target<'a> {
        Target {
            address: &placement.address,
            port,
            ca,
            user: ADMIN_USER,
            password: &credentials.admin_password,
        }
    }

    /// Writes `redis.conf` and `users.acl` of data node `index`.
    pub fn write_data_conf(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        index: usize,
        leader: Option<&(String, u16)>,
        credentials: &Credentials,
        load_seed: bool,
    ) -> Result<()> {
        let node = &placement.nodes[index];
        let dir = self.process_dir(placement, &node.name);
        std::fs::create_dir_all(&dir)?;
        let tls = self.tls_dir(&placement.cluster);
        let files = conf::Files {
            dir: &dir,
            tls: &tls,
        };
        let text = conf::data_node(
            &files,
            spec,
            &placement.address,
            node.port,
            leader.map(|(h, p)| (h.as_str(), *p)),
            credentials,
            load_seed,
        );
        tls::write_private(&dir.join(conf::CONF_FILE), text.as_bytes())?;
        tls::write_private(
            &dir.join(conf::ACL_FILE),
            conf::data_acl(credentials).as_bytes(),
        )?;
        Ok(())
    }

    /// Writes `sentinel.conf` (as `redis.conf`) of one sentinel.
    pub fn write_sentinel_conf(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        sentinel: &PlacedNode,
        leader: (&str, u16),
        credentials: &Credentials,
    ) -> Result<()> {
        let dir = self.process_dir(placement, &sentinel.name);
        std::fs::create_dir_all(&dir)?;
        let tls = self.tls_dir(&placement.cluster);
        let files = conf::Files {
            dir: &dir,
            tls: &tls,
        };
        let text = conf::sentinel(
            &files,
            spec,
            &placement.address,
            sentinel.port,
            &placement.master_name,
            leader,
            credentials,
        );
        tls::write_private(&dir.join(conf::CONF_FILE), text.as_bytes())?;
        Ok(())
    }

    /// The leader as the sentinels see it; without an answering sentinel,
    /// as the sentinels last wrote it in their configuration files.
    pub async fn current_leader(
        &self,
        placement: &Placement,
        credentials: &Credentials,
    ) -> Option<(String, u16)> {
        let ca = self.ca_pem(placement).ok().flatten();
        for sentinel in &placement.sentinels {
            let target = Self::admin(placement, ca.as_deref(), credentials, sentinel.port);
            let Ok(mut conn) = crate::client::connect(&target).await else {
                continue;
            };
            let answer: redis::RedisResult<Option<(String, u16)>> = redis::cmd("SENTINEL")
                .arg("get-master-addr-by-name")
                .arg(&placement.master_name)
                .query_async(&mut conn)
                .await;
            if let Ok(Some(leader)) = answer {
                return Some(leader);
            }
        }
        let monitor = format!("sentinel monitor {} ", placement.master_name);
        for sentinel in &placement.sentinels {
            let path = self
                .process_dir(placement, &sentinel.name)
                .join(conf::CONF_FILE);
            let Ok(text) = std::fs::read_to_string(path) else {
                continue;
            };
            if let Some(rest) = text.lines().find_map(|l| l.strip_prefix(&monitor)) {
                let mut parts = rest.split_whitespace();
                if let (Some(host), Some(Ok(port))) = (parts.next(), parts.next().map(str::parse)) {
                    return Some((host.to_owned(), port));
                }
            }
        }
        None
    }

    /// The directory of the data node listening on `port`.
    fn node_dir_by_port(&self, placement: &Placement, port: u16) -> Result<PathBuf> {
        placement
            .nodes
            .iter()
            .find(|n| n.port == port)
            .map(|n| self.process_dir(placement, &n.name))
            .ok_or_else(|| Error::Internal(format!("no node of the cluster on port {port}")))
    }
}

/// Every port `placement` holds.
fn ports_of(placement: &Placement) -> impl Iterator<Item = u16> + '_ {
    let processes = placement.nodes.iter().chain(&placement.sentinels);
    processes.chain(&placement.endpoint).map(|n| n.port)
}
