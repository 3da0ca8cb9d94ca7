//! The words the provider boundary speaks: what a cluster should be
//! ([`ClusterSpec`]), where it runs ([`Placement`]), and its members.

use std::fmt;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The PostgreSQL major versions offered (spec section 8); the first is the
/// default's opposite: [`DEFAULT_VERSION`] is the newest.
pub const VERSIONS: [&str; 3] = ["15", "16", "17"];
pub const DEFAULT_VERSION: &str = "17";

/// The extensions customers may create (spec section 8), by their API name.
pub const EXTENSIONS: [&str; 8] = [
    "pgvector",
    "pg_trgm",
    "unaccent",
    "uuid-ossp",
    "pgcrypto",
    "citext",
    "hstore",
    "pg_stat_statements",
];

/// The name PostgreSQL knows an allowlisted extension by (`pgvector` is
/// `vector` in `CREATE EXTENSION`).
pub fn extension_sql_name(name: &str) -> &str {
    match name {
        "pgvector" => "vector",
        other => other,
    }
}

/// The host's superuser in every cluster; customers never see it.
pub const ADMIN_ROLE: &str = "plateau_admin";

/// What a cluster should be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterSpec {
    pub id: String,
    /// `15`, `16` or `17`.
    pub version: String,
    pub memory_mb: u32,
    pub cpus: u32,
    pub disk_gb: u32,
    pub replicas: u32,
}

impl ClusterSpec {
    /// `shared_buffers` in MB: a quarter of the memory.
    pub fn shared_buffers_mb(&self) -> u32 {
        (self.memory_mb / 4).max(16)
    }

    /// `max_connections`: about one per 4 MB, between 25 and 400.
    pub fn max_connections(&self) -> u32 {
        (self.memory_mb / 4).clamp(25, 400)
    }
}

/// The two roles of every cluster: the customer's owner role, and the
/// host's superuser.
#[derive(Clone)]
pub struct Credentials {
    pub owner_password: String,
    pub admin_password: String,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Credentials(..)")
    }
}

/// Where a cluster runs: what the provider needs to find it again, kept by
/// the store as JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    /// The cluster's id.
    pub cluster: String,
    pub version: String,
    /// The address clients connect to.
    pub address: String,
    /// The leader's postmaster (the host's own connections).
    pub port: u16,
    /// The pooler in transaction mode (`uri`, and `readUri` through its
    /// read database).
    pub pooler_port: u16,
    /// The write endpoint (`writeUri`), which always leads to the leader
    /// whichever member that is; none for a cluster placed before it
    /// existed, until its next supervision round gives it one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router_port: Option<u16>,
    /// The generated owner role, and the database it owns.
    pub owner: String,
    pub database: String,
    /// Every server of the cluster, the leader among them; empty for a
    /// cluster placed before replicas existed (then `node0` on `port`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<Node>,
    /// The member that leads (`port` is its port).
    #[serde(default = "first_node")]
    pub leader: String,
}

fn first_node() -> String {
    "node0".to_owned()
}

/// One server of a cluster: its name (`node0`, `node1`, ...) and port.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    pub name: String,
    pub port: u16,
}

impl Placement {
    /// Every member, the leader first.
    pub fn nodes(&self) -> Vec<Node> {
        let mut nodes = if self.members.is_empty() {
            vec![Node {
                name: self.leader.clone(),
                port: self.port,
            }]
        } else {
            self.members.clone()
        };
        nodes.sort_by_key(|n| (n.name != self.leader, n.name.clone()));
        nodes
    }

    /// The members that follow the leader.
    pub fn standbys(&self) -> Vec<Node> {
        self.nodes()
            .into_iter()
            .filter(|n| n.name != self.leader)
            .collect()
    }

    /// The port of `writeUri`: the write endpoint, or the leader's own
    /// port for a cluster that has none yet.
    pub fn write_port(&self) -> u16 {
        self.router_port.unwrap_or(self.port)
    }

    /// The leader's member.
    pub fn leader_node(&self) -> Node {
        Node {
            name: self.leader.clone(),
            port: self.port,
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a placement serializes")
    }

    pub fn from_json(text: &str) -> crate::Result<Placement> {
        serde_json::from_str(text)
            .map_err(|e| crate::Error::Internal(format!("reading a database placement: {e}")))
    }
}

/// One server of a cluster as `GET /databases/{id}` shows it.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[schema(as = DatabaseMember)]
#[serde(rename_all = "camelCase")]
pub struct Member {
    /// `node0`, ...
    pub name: String,
    /// `leader` or `replica`.
    pub role: String,
    /// `running` (the leader), `streaming` (a replica receiving the
    /// leader's WAL), `starting` (a replica not streaming yet) or `down`.
    pub state: String,
    pub port: u16,
    /// Whether it accepts connections.
    pub healthy: bool,
    /// Bytes of WAL behind the leader (replicas).
    pub lag_bytes: Option<u64>,
}

/// What a base backup measured.
#[derive(Clone, Debug, Default)]
pub struct BaseBackup {
    /// Milliseconds since the epoch.
    pub started_at: i64,
    pub ended_at: i64,
    pub size_bytes: u64,
    /// The first WAL segment a restore needs, and the segment that makes
    /// the backup consistent.
    pub wal_start: String,
    pub wal_end: String,
}

/// Where a restore starts: a base backup of cluster `source` and its
/// archived WAL.
#[derive(Clone, Debug)]
pub struct RestoreFrom {
    pub source: String,
    pub backup_id: String,
    /// The backup's first WAL segment.
    pub wal_start: String,
    /// The source's owner role and its database, which the copy keeps.
    pub owner: String,
    pub database: String,
    /// Recover up to this time (milliseconds); none: to the end of the
    /// archive.
    pub target_time: Option<i64>,
}
