//! The `events` capability: events are checked, buffered with the call's
//! key-value writes, and committed with them.

use wasmtime::component::{HasData, Linker};

use crate::context::{CallContext, Phase};
use crate::overlay::Overlay;
use plateau_contract::NewEvent;

use crate::storage::EventRecord;

mod gen_ {
    wasmtime::component::bindgen!({
        path: ["../../wit/legacy/plugin@0.1.0", "../../wit/legacy/plugin@0.2.0", "../../wit/deps/events"],
        interfaces: "
            import plateau:plugin/events@0.1.0;
            import plateau:plugin/events@0.2.0;
            import plateau:events/events@0.3.0;
        ",
        imports: { default: async | trappable },
    });
}
use gen_::plateau::{
    events::events as v0_3, plugin0_1_0::events as v0_1, plugin0_2_0::events as v0_2,
};

/// What `events` sees of the store: the call, and the overlay the events
/// are buffered in.
pub(crate) struct EventsView<'a> {
    pub call: &'a CallContext,
    pub overlay: &'a mut Overlay,
}

struct HasEvents;

impl HasData for HasEvents {
    type Data<'a> = EventsView<'a>;
}

pub(crate) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    view: fn(&mut T) -> EventsView<'_>,
) -> wasmtime::Result<()> {
    v0_1::add_to_linker::<T, HasEvents>(linker, view)?;
    v0_2::add_to_linker::<T, HasEvents>(linker, view)?;
    v0_3::add_to_linker::<T, HasEvents>(linker, view)
}

impl EventsView<'_> {
    /// Checks an event and buffers it; the error is the guest's.
    fn emit(&mut self, e: NewEvent) -> Result<(), String> {
        if self.call.phase == Phase::Describe {
            return Err("events cannot be emitted from describe".into());
        }
        let max = self.call.plugin.settings.limits.max_events;
        if self.overlay.event_count() >= max {
            return Err(format!("a call may emit at most {max} events"));
        }
        let plugin = &self.call.plugin.name;
        e.check_for(plugin)?;
        let organization_id = match (e.organization_id.clone(), self.call.caller_org()) {
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
            event: e,
            actor: self.call.caller.as_ref().and_then(|c| c.actor.clone()),
            at: self.call.plugin.services.clock.now_millis(),
        };
        self.overlay.push_event(record);
        Ok(())
    }
}

/// The traits of one WIT version's bindings, on the logic above.
macro_rules! wit_impls {
    ($($wit:ident),+) => {$(
        impl $wit::Host for EventsView<'_> {
            async fn emit(&mut self, e: $wit::NewEvent) -> wasmtime::Result<Result<(), String>> {
                Ok(EventsView::emit(self, NewEvent {
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
    )+};
}

wit_impls!(v0_1, v0_2, v0_3);
