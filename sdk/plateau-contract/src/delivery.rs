//! What the host delivers to a plugin besides requests: scheduled ticks,
//! events of an organisation's timeline, and due jobs.

use serde::de::DeserializeOwned;

use crate::namespace::Namespace;

/// A scheduled wake-up, delivered to `on_tick`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tick {
    /// The name given in [`crate::Description::schedule`].
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

/// A due job the plugin scheduled, delivered to `on_job` (WIT 0.2.0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub key: String,
    /// The organisation it was scheduled for; `None` for a global job.
    pub organization_id: Option<String>,
    pub payload: String,
    /// When it was due, in milliseconds since the Unix epoch.
    pub due: u64,
    /// 1 on the first delivery; more while a failing run is retried.
    pub attempt: u32,
}

impl Job {
    /// The namespace the job belongs to, to open its data.
    pub fn namespace(&self) -> Namespace {
        match &self.organization_id {
            Some(id) => Namespace::Organization(id.clone()),
            None => Namespace::Global,
        }
    }
}
