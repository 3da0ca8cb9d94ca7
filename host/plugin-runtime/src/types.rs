//! The runtime's own view of the WIT records that cross the boundary, so
//! callers never see generated bindings and a later WIT version can map onto
//! the same types.

/// Who is calling; see `types.caller` in the WIT.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller {
    pub organization_id: Option<String>,
    pub project_id: Option<String>,
    pub scopes: Vec<String>,
    pub actor: Option<String>,
    pub plan: Option<String>,
}

/// A request routed to a plugin.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    /// Path below the API base: `/flags/new-checkout`.
    pub path: String,
    /// The matched route pattern: `/flags/{key}`.
    pub route: String,
    /// Raw query string, without `?`.
    pub query: String,
    /// Lowercase names.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub caller: Caller,
}

/// A plugin's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// Who may call a route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    Public,
    Authenticated,
    Scope(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub method: String,
    pub path: String,
    pub access: Access,
    pub summary: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeInfo {
    pub name: String,
    pub description: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    pub name: String,
    pub every_seconds: u32,
}

/// What a plugin says about itself, checked at load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Description {
    pub name: String,
    pub version: String,
    pub prefixes: Vec<String>,
    pub routes: Vec<Route>,
    pub scopes: Vec<ScopeInfo>,
    pub capabilities: Vec<String>,
    pub subscriptions: Vec<String>,
    pub schedules: Vec<Schedule>,
}

/// An event from an organisation's timeline, delivered to `on-event`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub id: String,
    pub organization_id: String,
    pub event_type: String,
    pub resource_type: Option<String>,
    pub resource_id: Option<String>,
    /// A JSON object.
    pub data: String,
    /// Milliseconds since the Unix epoch.
    pub at: u64,
}

/// A scheduled wake-up, delivered to `on-tick`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tick {
    pub schedule: String,
    pub at: u64,
}

/// A durable job the plugin scheduled, delivered to `on-job` (WIT 0.2.0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub key: String,
    pub organization_id: Option<String>,
    pub payload: String,
    /// Milliseconds since the Unix epoch.
    pub due: u64,
    /// 1 on the first delivery.
    pub attempt: u32,
}
