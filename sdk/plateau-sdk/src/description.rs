//! What a plugin says about itself (`describe`), and the tick and event
//! values the host delivers to it.

use serde::de::DeserializeOwned;

use crate::http::Method;

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

/// One route of the self-description; produced by [`crate::Router::routes`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteInfo {
    pub method: Method,
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

/// A recurring wake-up delivered to [`crate::Plugin::on_tick`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    pub name: String,
    pub every_seconds: u32,
}

/// A host interface the plugin intends to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
    /// SMTP submission (WIT 0.2.0).
    Smtp,
    /// Host-key encryption (WIT 0.2.0).
    Secrets,
}

impl Capability {
    /// The name used in the WIT `description.capabilities` list.
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
        }
    }
}

/// The plugin's self-description; the host checks it at load.
///
/// `routes` is filled from the plugin's [`crate::Router`] by
/// [`crate::describe`]; a plugin's `describe` leaves it empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Description {
    /// Stable name, also the key of the plugin's data: `notes`.
    pub name: String,
    /// The component's own version, semver.
    pub version: String,
    /// Path prefixes the plugin owns below the API base: `/notes`.
    pub prefixes: Vec<String>,
    pub routes: Vec<RouteInfo>,
    pub scopes: Vec<ScopeInfo>,
    /// kv, events, http, log, config, clock, cursors.
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

    /// Mistakes the host would refuse at load, checked here so a native unit
    /// test finds them first: routes outside the prefixes, route scopes the
    /// plugin does not declare, scopes not named `area:verb`.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.prefixes.is_empty() {
            problems.push("declare at least one prefix".to_owned());
        }
        for prefix in &self.prefixes {
            if !prefix.starts_with('/') || prefix.len() < 2 || prefix.ends_with('/') {
                problems.push(format!("prefix {prefix} must look like /name"));
            }
        }
        for route in &self.routes {
            let under = self
                .prefixes
                .iter()
                .any(|p| route.path == *p || route.path.starts_with(&format!("{p}/")));
            if !under {
                problems.push(format!(
                    "route {} {} is outside the prefixes",
                    route.method, route.path
                ));
            }
            if let Access::Scope(scope) = &route.access
                && !self.scopes.iter().any(|s| s.name == *scope)
            {
                problems.push(format!(
                    "route {} {} uses the undeclared scope {scope}",
                    route.method, route.path
                ));
            }
        }
        for scope in &self.scopes {
            let well_formed = scope
                .name
                .split_once(':')
                .is_some_and(|(a, v)| !a.is_empty() && !v.is_empty());
            if !well_formed {
                problems.push(format!("scope {} must be named area:verb", scope.name));
            }
        }
        problems
    }
}

/// A scheduled wake-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tick {
    /// The name given in [`Description::schedule`].
    pub schedule: String,
    /// Milliseconds since the Unix epoch, from the host clock.
    pub at: u64,
}

/// An event from an organisation's timeline, delivered to `on_event`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub id: String,
    pub organization_id: String,
    /// `area.resource.verb`.
    pub event_type: String,
    pub resource_type: Option<String>,
    pub resource_id: Option<String>,
    /// A JSON object.
    pub data: String,
    /// Milliseconds since the Unix epoch.
    pub at: u64,
}

impl Event {
    /// `data` parsed as `T`.
    pub fn data_as<T: DeserializeOwned>(&self) -> serde_json::Result<T> {
        serde_json::from_str(&self.data)
    }
}
