//! What the operator configures: the runtime as a whole, and each plugin's
//! grants, settings and limits.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ipnet::IpNet;

use crate::app_env::AppEnv;
use crate::clock::Clock;
use crate::commands::Commands;
use crate::cursors::CursorCodec;
use crate::platform_logs::PlatformLogs;
use crate::storage::Storage;
use plateau_seal::Sealer;

/// A host interface a plugin may be granted; the names and the interfaces
/// they guard are part of the contract with the guests.
pub use plateau_contract::Capability;

/// Settings of the runtime as a whole.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Where compiled components are cached; created if missing.
    pub cache_dir: PathBuf,
    /// How many plugin instances may run at once; sizes the pooling
    /// allocator. Requests beyond it wait for a free slot.
    pub max_concurrency: u32,
    /// The period of the epoch ticker that enforces deadlines.
    pub epoch_tick: Duration,
    /// Addresses that outbound HTTP may reach although they are loopback,
    /// private or link-local (the operator's `PLATEAU_EGRESS_ALLOW`, parsed
    /// with [`crate::egress::parse_allow_list`]).
    pub egress_allow: Vec<IpNet>,
    /// DER certificates trusted for outbound https besides Mozilla's roots.
    pub extra_tls_roots: Vec<Vec<u8>>,
    /// This host's app edge: plain-HTTP requests to its apps go there.
    pub local_edge: Option<crate::egress::LocalEdge>,
    /// Path prefixes of the core API that no plugin may claim.
    pub reserved_prefixes: Vec<String>,
    /// Use the pooling allocator (falls back to on-demand allocation with a
    /// warning if its reservation fails).
    pub pooling: bool,
    /// Write `/tmp/perf-<pid>.map` so that `perf` names the functions of
    /// compiled guests (the operator's `PLATEAU_PLUGIN_PERF_MAP`).
    pub perf_map: bool,
}

impl RuntimeConfig {
    pub fn new(cache_dir: impl Into<PathBuf>) -> Self {
        RuntimeConfig {
            cache_dir: cache_dir.into(),
            max_concurrency: 64,
            epoch_tick: Duration::from_millis(10),
            egress_allow: Vec::new(),
            extra_tls_roots: Vec::new(),
            local_edge: None,
            reserved_prefixes: [
                "/auth",
                "/orgs",
                "/organizations",
                "/projects",
                "/tokens",
                "/users",
                "/plugins",
                "/events",
                "/audit",
                "/health",
                "/metrics",
                "/openapi",
                "/docs",
                "/admin",
                plateau_contract::api_schema::PREFIX,
            ]
            .map(String::from)
            .to_vec(),
            pooling: true,
            perf_map: false,
        }
    }
}

/// What the runtime needs from the host: storage, time, cursor signing,
/// the key of the `secrets` capability, the command runner of `runner` and
/// the log reader of `logs` and the apps of `app-env`.
#[derive(Clone)]
pub struct Services {
    pub storage: Arc<dyn Storage>,
    pub clock: Arc<dyn Clock>,
    pub cursors: Arc<dyn CursorCodec>,
    pub sealer: Arc<Sealer>,
    /// Runs command images; without it `runner` answers that this host
    /// runs no commands.
    pub commands: Option<Arc<dyn Commands>>,
    /// Reads the platform's logs; without it `logs` answers that this host
    /// has none to read.
    pub logs: Option<Arc<dyn PlatformLogs>>,
    /// Sets plugins' layers of apps' environments; without it `app-env`
    /// answers that this host has no apps.
    pub app_env: Option<Arc<dyn AppEnv>>,
}

/// Limits applied to every request, tick and event of one plugin.
#[derive(Debug, Clone)]
pub struct PluginLimits {
    /// Linear memory of one instance, in bytes.
    pub memory_bytes: usize,
    /// Wall-clock time of one call, host calls included.
    pub deadline: Duration,
    /// Fuel of one call (roughly one unit per wasm instruction).
    pub fuel: u64,
    /// The longest an outbound HTTP request may take; a guest's own
    /// `timeout-ms` is capped by it.
    pub http_timeout: Duration,
    /// The largest outbound HTTP response body, in bytes.
    pub http_max_response_bytes: usize,
    /// How long a storage call or a commit may take.
    pub storage_timeout: Duration,
    /// How many events one call may emit.
    pub max_events: usize,
    /// How many key-value writes one call may buffer.
    pub max_writes: usize,
    /// How many bytes of keys and values one call may buffer.
    pub max_write_bytes: usize,
}

impl Default for PluginLimits {
    fn default() -> Self {
        PluginLimits {
            memory_bytes: 64 << 20,
            deadline: Duration::from_secs(10),
            fuel: 10_000_000_000,
            http_timeout: Duration::from_secs(10),
            http_max_response_bytes: 4 << 20,
            storage_timeout: Duration::from_secs(5),
            max_events: 100,
            max_writes: 1000,
            max_write_bytes: 16 << 20,
        }
    }
}

/// What the operator set for one plugin.
#[derive(Debug, Clone, Default)]
pub struct PluginSettings {
    /// The capabilities granted; imports of others are refused at load.
    pub grants: BTreeSet<Capability>,
    /// Hosts reachable through outbound HTTP: `api.example.com`,
    /// `*.example.com` (any subdomain), optionally with `:port`.
    pub outbound_hosts: Vec<String>,
    /// Values the plugin reads through the `config` interface.
    pub config: BTreeMap<String, String>,
    pub limits: PluginLimits,
}

impl PluginSettings {
    /// Settings granting every capability, with default limits.
    pub fn all_granted() -> Self {
        PluginSettings {
            grants: Capability::ALL.into_iter().collect(),
            ..PluginSettings::default()
        }
    }
}
