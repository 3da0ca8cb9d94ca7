//! The `events` capability: events are checked, buffered with the call's
//! key-value writes, and committed with them.

use wasmtime::component::{HasSelf, Linker};

use crate::bindings::v0_1::plateau::plugin::events as v0_1;
use crate::bindings::v0_2::plateau::plugin::events as v0_2;
use crate::state::{Phase, State};
use crate::storage::EventRecord;

/// The largest `data` of one event, in bytes.
const MAX_DATA: usize = 64 << 10;

pub(crate) fn add_to_linker(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    v0_1::add_to_linker::<State, HasSelf<State>>(linker, |s| s)?;
    v0_2::add_to_linker::<State, HasSelf<State>>(linker, |s| s)
}

/// What a plugin asks to record, independent of the WIT version.
pub(crate) struct NewEvent {
    pub organization_id: Option<String>,
    pub event_type: String,
    pub action: String,
    pub resource_type: Option<String>,
    pub resource_id: Option<String>,
    pub data: String,
    pub audit: bool,
}

/// A segment of an event type: `[a-z][a-z0-9_-]*`.
fn is_segment(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

impl State {
    /// Checks an event and buffers it; the error is the guest's.
    pub(crate) fn emit_event(&mut self, e: NewEvent) -> Result<(), String> {
        if self.phase == Phase::Describe {
            return Err("events cannot be emitted from describe".into());
        }
        let max = self.plugin.settings.limits.max_events;
        if self.overlay.event_count() >= max {
            return Err(format!("a call may emit at most {max} events"));
        }
        let plugin = &self.plugin.name;
        let segments: Vec<&str> = e.event_type.split('.').collect();
        if segments.len() < 2 || e.event_type.len() > 128 || !segments.iter().all(|s| is_segment(s))
        {
            return Err(format!(
                "event type `{}` must be `area.resource.verb` in lowercase, for example `{plugin}.item.updated`",
                e.event_type
            ));
        }
        if segments[0] != plugin {
            return Err(format!(
                "event type `{}` must start with the plugin's name: `{plugin}.`",
                e.event_type
            ));
        }
        if e.action.is_empty() || e.action.len() > 64 {
            return Err("action must be 1 to 64 bytes, for example `update`".into());
        }
        if e.data.len() > MAX_DATA {
            return Err(format!("data must be at most {MAX_DATA} bytes"));
        }
        if serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&e.data).is_err() {
            return Err("data must be a JSON object".into());
        }
        let organization_id = match (e.organization_id, self.caller_org()) {
            (Some(id), Some(caller)) if id != caller => {
                return Err("a request may emit events only for its caller's organisation".into());
            }
            (Some(id), _) if !id.is_empty() => id,
            (None, Some(caller)) => caller.to_string(),
            _ => return Err("this call has no caller organisation; set organization-id".into()),
        };
        let record = EventRecord {
            plugin: plugin.clone(),
            organization_id,
            event_type: e.event_type,
            action: e.action,
            resource_type: e.resource_type,
            resource_id: e.resource_id,
            data: e.data,
            audit: e.audit,
            actor: self.caller.as_ref().and_then(|c| c.actor.clone()),
            at: self.plugin.services.clock.now_millis(),
        };
        self.overlay.push_event(record);
        Ok(())
    }
}
/// The traits of one WIT version's bindings, on the logic above.
macro_rules! wit_impls {
    ($module:ident, $version:ident) => {
        mod $module {
            use super::$version as wit;
            use super::*;

            impl wit::Host for State {
                async fn emit(&mut self, e: wit::NewEvent) -> wasmtime::Result<Result<(), String>> {
                    Ok(self.emit_event(NewEvent {
                        organization_id: e.organization_id,
                        event_type: e.type_,
                        action: e.action,
                        resource_type: e.resource_type,
                        resource_id: e.resource_id,
                        data: e.data,
                        audit: e.audit,
                    }))
                }
            }
        }
    };
}

wit_impls!(impls_v0_1, v0_1);
wit_impls!(impls_v0_2, v0_2);
