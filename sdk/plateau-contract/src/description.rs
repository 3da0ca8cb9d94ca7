//! What a plugin says about itself (`describe`): its name, prefixes,
//! routes, scopes, capabilities, subscriptions and schedules. The host
//! receives it at load and refuses it with [`Description::problems`] (plus
//! its own operator checks); a plugin's test calls the same function.

use std::fmt;
use std::str::FromStr;

pub use crate::checks::{is_name, is_prefix, is_under};

/// Who may call a route.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Access {
    /// Anyone, without a token (ingest and ping URLs).
    Public,
    /// Any valid token of the organisation.
    Authenticated,
    /// A token carrying this scope.
    Scope(String),
}

impl Access {
    pub fn scope(name: impl Into<String>) -> Self {
        Access::Scope(name.into())
    }
}

/// One route of the self-description; the SDK's router produces them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// Uppercase: `GET`, `POST`, `PUT`, `PATCH` or `DELETE`.
    pub method: String,
    /// A pattern of [`crate::route`]: `/notes/{id}`.
    pub path: String,
    pub access: Access,
    pub summary: String,
}

/// A scope the plugin introduces into the token model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeInfo {
    /// `area:verb`, for example `notes:read`.
    pub name: String,
    pub description: String,
}

/// A recurring wake-up delivered to the plugin's `on_tick`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    pub name: String,
    pub every_seconds: u32,
}

/// A host interface a plugin uses and the operator grants. The WASI
/// interfaces that Rust's standard library needs are always linked, locked
/// down, and need no grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Capability {
    Kv,
    Events,
    Http,
    Log,
    Config,
    Clock,
    Cursors,
    /// Durable jobs (WIT 0.2.0).
    Scheduler,
    /// Outbound SMTP submission (WIT 0.2.0).
    Smtp,
    /// Encryption under the host's key (WIT 0.2.0).
    Secrets,
    /// Running `wasi:cli` command images of the registry (WIT 0.4.0).
    Runner,
    /// Reading the platform's logs of an organisation after a cursor (WIT
    /// 0.5.1).
    Logs,
    /// Raw bytes over TCP or TLS through the egress guard (WIT 0.5.1).
    Tcp,
    /// A plugin's layer of an app's environment; a change redeploys the
    /// app (WIT 0.5.2).
    AppEnv,
}

impl Capability {
    pub const ALL: [Capability; 14] = [
        Capability::Kv,
        Capability::Events,
        Capability::Http,
        Capability::Log,
        Capability::Config,
        Capability::Clock,
        Capability::Cursors,
        Capability::Scheduler,
        Capability::Smtp,
        Capability::Secrets,
        Capability::Runner,
        Capability::Logs,
        Capability::Tcp,
        Capability::AppEnv,
    ];

    /// The name used in grants and in the description's `capabilities`.
    pub fn as_str(self) -> &'static str {
        match self {
            Capability::Kv => "kv",
            Capability::Events => "events",
            Capability::Http => "http",
            Capability::Log => "log",
            Capability::Config => "config",
            Capability::Clock => "clock",
            Capability::Cursors => "cursors",
            Capability::Scheduler => "scheduler",
            Capability::Smtp => "smtp",
            Capability::Secrets => "secrets",
            Capability::Runner => "runner",
            Capability::Logs => "logs",
            Capability::Tcp => "tcp",
            Capability::AppEnv => "app-env",
        }
    }

    /// The capability that guards a `plateau:plugin` interface, by its name
    /// without package or version; `None` for interfaces without one.
    pub fn of_interface(interface: &str) -> Option<Capability> {
        match interface {
            "outbound-http" => Some(Capability::Http),
            "http" => None,
            other => other.parse().ok(),
        }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Capability {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Capability::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown capability `{s}`; use kv, events, http, log, config, clock, cursors, scheduler, smtp, secrets, runner, logs, tcp or app-env"
                )
            })
    }
}

/// The plugin's self-description; the host checks it at load.
///
/// In the SDK, `routes` is filled from the plugin's router by
/// `plateau_sdk::describe`; a plugin's `describe` leaves it empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Description {
    /// Stable name, also the key of the plugin's data: `notes`.
    pub name: String,
    /// The component's own version, semver.
    pub version: String,
    /// Path prefixes the plugin owns below the API base: `/notes`.
    pub prefixes: Vec<String>,
    pub routes: Vec<Route>,
    pub scopes: Vec<ScopeInfo>,
    /// [`Capability`] names: kv, events, http, ...
    pub capabilities: Vec<String>,
    /// Event types (exact, or ending in `*`) delivered to `on_event`.
    pub subscriptions: Vec<String>,
    pub schedules: Vec<Schedule>,
}

impl Description {
    /// A description named `name` at `version`; pass
    /// `env!("CARGO_PKG_VERSION")` to use the crate's version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Description {
            name: name.into(),
            version: version.into(),
            prefixes: Vec::new(),
            routes: Vec::new(),
            scopes: Vec::new(),
            capabilities: Vec::new(),
            subscriptions: Vec::new(),
            schedules: Vec::new(),
        }
    }

    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefixes.push(prefix.into());
        self
    }

    pub fn scope(mut self, name: impl Into<String>, description: impl Into<String>) -> Self {
        self.scopes.push(ScopeInfo {
            name: name.into(),
            description: description.into(),
        });
        self
    }

    pub fn capability(mut self, capability: Capability) -> Self {
        let name = capability.as_str().to_owned();
        if !self.capabilities.contains(&name) {
            self.capabilities.push(name);
        }
        self
    }

    pub fn capabilities(self, capabilities: &[Capability]) -> Self {
        capabilities.iter().fold(self, |d, c| d.capability(*c))
    }

    /// Subscribes `on_event` to an event type, or a family ending in `*`.
    pub fn subscribe(mut self, event_type: impl Into<String>) -> Self {
        self.subscriptions.push(event_type.into());
        self
    }

    /// Asks for `on_tick` every `every_seconds`, with `name` as the tick's schedule.
    pub fn schedule(mut self, name: impl Into<String>, every_seconds: u32) -> Self {
        self.schedules.push(Schedule {
            name: name.into(),
            every_seconds,
        });
        self
    }
}
