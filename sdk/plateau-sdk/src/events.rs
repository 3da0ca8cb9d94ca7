//! Events into the organisation's timeline and, when audited, its audit log.
//!
//! Events are committed with the request's key-value writes: an answer of
//! 500 or more discards both.

use serde::Serialize;

use crate::error::ApiError;
use crate::sys;
/// The event as the host receives and records it.
pub use plateau_contract::NewEvent as Recorded;

/// An event to record.
///
/// ```no_run
/// # use plateau_sdk::NewEvent;
/// # fn run() -> Result<(), plateau_sdk::ApiError> {
/// NewEvent::new("notes.note.created", "create")
///     .resource("note", "n1")
///     .data(&serde_json::json!({"title": "Groceries"}))
///     .audit()
///     .emit()?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent {
    event: Recorded,
    invalid_data: Option<String>,
}

impl NewEvent {
    pub fn new(event_type: impl Into<String>, action: impl Into<String>) -> Self {
        NewEvent {
            event: Recorded::new(event_type, action),
            invalid_data: None,
        }
    }

    /// The resource the event is about.
    pub fn resource(
        mut self,
        resource_type: impl Into<String>,
        resource_id: impl Into<String>,
    ) -> Self {
        self.event.resource_type = Some(resource_type.into());
        self.event.resource_id = Some(resource_id.into());
        self
    }

    /// Records the event for `organization_id` instead of the caller's
    /// organisation (from ticks, events and public routes).
    pub fn organization(mut self, organization_id: impl Into<String>) -> Self {
        self.event.organization_id = Some(organization_id.into());
        self
    }

    /// The event's data; it must serialize to a JSON object, which
    /// [`NewEvent::emit`] checks.
    pub fn data<T: Serialize + ?Sized>(mut self, data: &T) -> Self {
        match serde_json::to_value(data) {
            Ok(value @ serde_json::Value::Object(_)) => {
                self.event.data = value.to_string();
                self.invalid_data = None;
            }
            Ok(_) => self.invalid_data = Some("event data must be a json object".to_owned()),
            Err(e) => self.invalid_data = Some(format!("event data does not serialize: {e}")),
        }
        self
    }

    /// Also records the event in the audit log.
    pub fn audit(mut self) -> Self {
        self.event.audit = true;
        self
    }

    /// Records the event, after the host's own checks
    /// ([`Recorded::check`]).
    pub fn emit(self) -> Result<(), EventError> {
        if let Some(why) = self.invalid_data {
            return Err(EventError(why));
        }
        self.event.check().map_err(EventError)?;
        sys::emit(&self.event).map_err(EventError)
    }
}

/// The host refused or failed to record an event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("could not record the event: {0}")]
pub struct EventError(pub String);

impl From<EventError> for ApiError {
    /// A 500, so the request's writes roll back with the missing event.
    fn from(error: EventError) -> ApiError {
        ApiError::internal(error.to_string())
    }
}
