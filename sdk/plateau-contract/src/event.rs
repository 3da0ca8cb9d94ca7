//! An event a plugin asks the host to record (the `events` capability), and
//! the rules the host checks before it does. The SDK's test harness runs the
//! same checks, so a plugin's tests fail where the host would refuse.

/// The largest `data` of one event, in bytes.
pub const MAX_EVENT_DATA: usize = 64 << 10;
/// The longest event type, in bytes.
pub const MAX_EVENT_TYPE: usize = 128;
/// The longest action, in bytes.
pub const MAX_ACTION: usize = 64;

/// What a plugin asks to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent {
    /// None: the caller's organisation.
    pub organization_id: Option<String>,
    /// `area.resource.verb`, for example `notes.note.created`.
    pub event_type: String,
    /// create, update, delete, ...
    pub action: String,
    pub resource_type: Option<String>,
    pub resource_id: Option<String>,
    /// A JSON object; never put secrets here.
    pub data: String,
    /// Also record it in the audit log.
    pub audit: bool,
}

impl NewEvent {
    /// An event of `event_type` with empty data, for the caller's organisation.
    pub fn new(event_type: impl Into<String>, action: impl Into<String>) -> Self {
        NewEvent {
            organization_id: None,
            event_type: event_type.into(),
            action: action.into(),
            resource_type: None,
            resource_id: None,
            data: "{}".to_owned(),
            audit: false,
        }
    }

    /// The rules of any event: the type's grammar, the action's length, and
    /// data that is a JSON object within [`MAX_EVENT_DATA`]. The error is
    /// the guest's, saying what to change.
    pub fn check(&self) -> Result<(), String> {
        let segments: Vec<&str> = self.event_type.split('.').collect();
        if segments.len() < 2
            || self.event_type.len() > MAX_EVENT_TYPE
            || !segments.iter().all(|s| is_segment(s))
        {
            return Err(format!(
                "event type `{}` must be `area.resource.verb` in lowercase, for example `notes.item.updated`",
                self.event_type
            ));
        }
        if self.action.is_empty() || self.action.len() > MAX_ACTION {
            return Err(format!(
                "action must be 1 to {MAX_ACTION} bytes, for example `update`"
            ));
        }
        if self.data.len() > MAX_EVENT_DATA {
            return Err(format!("data must be at most {MAX_EVENT_DATA} bytes"));
        }
        if serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&self.data).is_err() {
            return Err("data must be a JSON object".into());
        }
        Ok(())
    }

    /// [`NewEvent::check`], and the type starts with the plugin's name.
    pub fn check_for(&self, plugin: &str) -> Result<(), String> {
        self.check()?;
        match self.event_type.split_once('.') {
            Some((area, _)) if area == plugin => Ok(()),
            _ => Err(format!(
                "event type `{}` must start with the plugin's name: `{plugin}.`",
                self.event_type
            )),
        }
    }
}

/// A segment of an event type: `[a-z][a-z0-9_-]*`.
fn is_segment(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rules_of_an_event() {
        let ok = NewEvent::new("notes.note.created", "create");
        assert_eq!(ok.check_for("notes"), Ok(()));
        assert!(ok.check_for("flags").unwrap_err().contains("`flags.`"));
        for bad in ["notes", "Notes.note", "notes..x", "notes.1x"] {
            assert!(NewEvent::new(bad, "create").check().is_err(), "{bad}");
        }
        assert!(NewEvent::new("notes.note", "").check().is_err());
        let array = NewEvent {
            data: "[1]".into(),
            ..ok.clone()
        };
        assert_eq!(array.check().unwrap_err(), "data must be a JSON object");
        let big = NewEvent {
            data: format!("{{\"a\":\"{}\"}}", "x".repeat(MAX_EVENT_DATA)),
            ..ok
        };
        assert!(big.check().unwrap_err().contains("at most"));
    }
}
