//! The operator's plugin configuration: which capabilities and outbound
//! hosts each plugin is granted, its configuration values and limits.
//!
//! Read from the JSON file named by `PLATEAU_PLUGINS_CONFIG`:
//!
//! ```json
//! { "plugins": { "checks": { "grants": ["kv", "events", "http", "clock"],
//!                            "outboundHosts": ["api.example.com", "*.example.org"],
//!                            "config": { "region": "eu" },
//!                            "memoryMb": 64, "deadlineMs": 10000 } } }
//! ```
//!
//! A plugin the file does not name is granted kv, events, log, config,
//! clock and cursors: everything but the network, durable jobs and secrets.
//! The built-in plugins that need more get it by default (see
//! [`BUILTIN_GRANTS`]); an entry in the file replaces those defaults.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use plateau_plugin_runtime::{Capability, PluginLimits, PluginSettings};
use serde::Deserialize;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginsConfig {
    #[serde(default)]
    pub plugins: BTreeMap<String, PluginConfig>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PluginConfig {
    pub grants: Option<Vec<String>>,
    #[serde(default)]
    pub outbound_hosts: Vec<String>,
    #[serde(default)]
    pub config: BTreeMap<String, String>,
    pub memory_mb: Option<usize>,
    pub deadline_ms: Option<u64>,
    pub fuel: Option<u64>,
}

/// What a plugin gets when the operator did not say.
pub const DEFAULT_GRANTS: [Capability; 6] = [
    Capability::Kv,
    Capability::Events,
    Capability::Log,
    Capability::Config,
    Capability::Clock,
    Capability::Cursors,
];

/// The extra capabilities and outbound hosts of the built-in plugins that
/// reach the network: checks and the email relay reach whatever host their
/// users configure (`*`; the address policy still refuses internal ones).
pub const BUILTIN_GRANTS: &[(&str, &[Capability], &[&str])] = &[
    (
        "email",
        &[Capability::Smtp, Capability::Secrets, Capability::Scheduler],
        &["*"],
    ),
    (
        "checks",
        &[Capability::Http, Capability::Scheduler, Capability::Secrets],
        &["*"],
    ),
    (
        "heartbeats",
        &[Capability::Http, Capability::Scheduler, Capability::Secrets],
        &["*"],
    ),
    ("queues", &[Capability::Scheduler], &[]),
    (
        "cron",
        &[Capability::Http, Capability::Scheduler, Capability::Runner],
        &["*"],
    ),
    ("workflows", &[Capability::Scheduler], &[]),
    (
        "webhooks",
        &[Capability::Http, Capability::Scheduler, Capability::Secrets],
        &["*"],
    ),
    (
        "log-drains",
        &[
            Capability::Http,
            Capability::Scheduler,
            Capability::Secrets,
            Capability::Logs,
            Capability::Tcp,
        ],
        &["*"],
    ),
    ("otel", &[Capability::Scheduler], &[]),
    (
        "status-pages",
        &[Capability::Http, Capability::Scheduler, Capability::Secrets],
        &["*"],
    ),
    (
        "config",
        &[
            Capability::Secrets,
            Capability::Scheduler,
            Capability::AppEnv,
        ],
        &[],
    ),
];

/// The call deadline of the built-in plugins whose calls wait on long
/// host work: a cron job's run (an http request or a command, up to its
/// 30 s timeout) happens inside one call, from a trigger or from the
/// scheduler's `on-job`; and the http jobs of an organisation due together
/// (at most its plan's 200) run in one call, whose `send-many` keeps 64 in
/// flight: four rounds of 30 s, and their records.
/// A log drain's run reads new lines and sends up to four batches, each
/// under a 10 s timeout.
pub const BUILTIN_DEADLINES: &[(&str, Duration)] = &[
    ("cron", Duration::from_secs(150)),
    ("log-drains", Duration::from_secs(60)),
];

impl PluginsConfig {
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        let config: PluginsConfig =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        for (name, plugin) in &config.plugins {
            plugin
                .settings()
                .map_err(|e| format!("{}: plugin {name}: {e}", path.display()))?;
        }
        Ok(config)
    }

    /// The runtime settings of plugin `name`.
    pub fn settings(&self, name: &str) -> PluginSettings {
        match self.plugins.get(name) {
            Some(plugin) => plugin.settings().unwrap_or_else(|_| default_settings(name)),
            None => default_settings(name),
        }
    }
}

fn default_settings(name: &str) -> PluginSettings {
    let mut settings = PluginSettings {
        grants: DEFAULT_GRANTS.into_iter().collect(),
        ..PluginSettings::default()
    };
    if let Some((_, grants, hosts)) = BUILTIN_GRANTS.iter().find(|(n, _, _)| *n == name) {
        settings.grants.extend(grants.iter().copied());
        settings.outbound_hosts = hosts.iter().map(|h| (*h).to_owned()).collect();
    }
    if let Some((_, deadline)) = BUILTIN_DEADLINES.iter().find(|(n, _)| *n == name) {
        settings.limits.deadline = *deadline;
        settings.limits.http_timeout = settings.limits.http_timeout.max(*deadline);
    }
    settings
}

impl PluginConfig {
    fn settings(&self) -> Result<PluginSettings, String> {
        let grants = match &self.grants {
            Some(names) => names
                .iter()
                .map(|n| n.parse::<Capability>())
                .collect::<Result<_, _>>()?,
            None => DEFAULT_GRANTS.into_iter().collect(),
        };
        let mut limits = PluginLimits::default();
        if let Some(mb) = self.memory_mb {
            limits.memory_bytes = mb << 20;
        }
        if let Some(ms) = self.deadline_ms {
            limits.deadline = Duration::from_millis(ms);
        }
        if let Some(fuel) = self.fuel {
            limits.fuel = fuel;
        }
        Ok(PluginSettings {
            grants,
            outbound_hosts: self.outbound_hosts.clone(),
            config: self.config.clone(),
            limits,
        })
    }
}
