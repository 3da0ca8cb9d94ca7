//! The words the provider boundary speaks: what a cluster should be
//! ([`ClusterSpec`]), where it runs ([`Placement`]), and what it reports.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Redis's `maxmemory-policy` values the platform offers (spec section 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum EvictionPolicy {
    Noeviction,
    AllkeysLru,
    AllkeysLfu,
    AllkeysRandom,
    VolatileLru,
}

impl EvictionPolicy {
    pub const ALL: [EvictionPolicy; 5] = [
        EvictionPolicy::Noeviction,
        EvictionPolicy::AllkeysLru,
        EvictionPolicy::AllkeysLfu,
        EvictionPolicy::AllkeysRandom,
        EvictionPolicy::VolatileLru,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EvictionPolicy::Noeviction => "noeviction",
            EvictionPolicy::AllkeysLru => "allkeys-lru",
            EvictionPolicy::AllkeysLfu => "allkeys-lfu",
            EvictionPolicy::AllkeysRandom => "allkeys-random",
            EvictionPolicy::VolatileLru => "volatile-lru",
        }
    }
}

/// How the leader keeps its data across restarts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Persistence {
    /// Memory only.
    None,
    /// Periodic RDB snapshots.
    Rdb,
    /// Append-only file, fsync every second.
    Aof,
}

impl Persistence {
    pub const ALL: [Persistence; 3] = [Persistence::None, Persistence::Rdb, Persistence::Aof];

    pub fn as_str(self) -> &'static str {
        match self {
            Persistence::None => "none",
            Persistence::Rdb => "rdb",
            Persistence::Aof => "aof",
        }
    }
}

macro_rules! from_str_by_name {
    ($ty:ty, $what:literal) => {
        impl FromStr for $ty {
            type Err = String;

            fn from_str(s: &str) -> Result<Self, String> {
                <$ty>::ALL
                    .into_iter()
                    .find(|v| v.as_str() == s)
                    .ok_or_else(|| {
                        let names: Vec<&str> = <$ty>::ALL.iter().map(|v| v.as_str()).collect();
                        format!(concat!($what, " must be one of {}"), names.join(", "))
                    })
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

from_str_by_name!(EvictionPolicy, "evictionPolicy");
from_str_by_name!(Persistence, "persistence");

/// What a cluster should be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterSpec {
    pub id: String,
    pub memory_mb: u32,
    pub eviction_policy: EvictionPolicy,
    pub replicas: u32,
    pub persistence: Persistence,
    pub tls: bool,
}

/// The passwords of every cluster's users: the customer's (and the
/// read-only user's, derived from it), and the host's own
/// (administration, replication, sentinels), which customers never see.
#[derive(Clone)]
pub struct Credentials {
    pub password: String,
    pub admin_password: String,
}

impl Credentials {
    /// The password of the read-only user ([`READER`]): derived from the
    /// customer's, so it rotates with it, and telling nothing of it.
    pub fn reader_password(&self) -> String {
        use sha2::Digest as _;
        hex::encode(sha2::Sha256::digest(
            format!("plateau-cache-reader:{}", self.password).as_bytes(),
        ))
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Credentials(..)")
    }
}

/// The customer's ACL user on every node and sentinel.
pub const USER: &str = "app";
/// The customer's read-only ACL user, whose credentials `cache:read`
/// tokens are given.
pub const READER: &str = "app-readonly";
/// The host's ACL user.
pub const ADMIN_USER: &str = "plateau-admin";

/// One process of a cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacedNode {
    /// `node0`, `node1`, ... or `sentinel0`, ...
    pub name: String,
    pub port: u16,
}

/// Where a cluster runs: what the provider needs to find it again, kept by
/// the store as JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    /// The cluster's id.
    pub cluster: String,
    /// The address clients connect to.
    pub address: String,
    /// The name sentinels know the cluster by.
    pub master_name: String,
    pub tls: bool,
    /// Data nodes; the first was the first leader.
    pub nodes: Vec<PlacedNode>,
    pub sentinels: Vec<PlacedNode>,
    /// The stable endpoint that leads to the current leader (a cluster
    /// with replicas; clusters made before it existed have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<PlacedNode>,
}

impl Placement {
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a placement serializes")
    }

    pub fn from_json(text: &str) -> crate::Result<Placement> {
        serde_json::from_str(text)
            .map_err(|e| crate::Error::Internal(format!("reading a cache placement: {e}")))
    }

    pub fn sentinel_addresses(&self) -> Vec<String> {
        self.sentinels
            .iter()
            .map(|s| format!("{}:{}", self.address, s.port))
            .collect()
    }

    /// `host:port` that always reaches the leader: the endpoint of a
    /// cluster with one, else `None` (the leader's own address, which a
    /// cluster without replicas never changes).
    pub fn endpoint_address(&self) -> Option<String> {
        self.endpoint
            .as_ref()
            .map(|e| format!("{}:{}", self.address, e.port))
    }
}

/// Figures from the leader's INFO.
#[derive(Clone, Debug, Default, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Metrics {
    pub used_memory_bytes: u64,
    pub maxmemory_bytes: u64,
    pub keys: u64,
    pub keyspace_hits: u64,
    pub keyspace_misses: u64,
    pub evicted_keys: u64,
    pub expired_keys: u64,
    pub connected_clients: u64,
    pub connected_replicas: u64,
    pub replication_offset: u64,
    pub uptime_seconds: u64,
}

/// One line of a process's log.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogLine {
    /// The process: `node0`, `sentinel1`, ...
    pub process: String,
    pub line: String,
}
