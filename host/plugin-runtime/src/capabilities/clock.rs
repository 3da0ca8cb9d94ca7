//! The `clock` capability: the host's [`Clock`](crate::Clock).

use wasmtime::component::{HasData, Linker};

use crate::context::CallContext;

mod gen_ {
    wasmtime::component::bindgen!({
        path: ["../../wit/legacy/plugin@0.1.0", "../../wit/legacy/plugin@0.2.0", "../../wit/deps/clock"],
        interfaces: "
            import plateau:plugin/clock@0.1.0;
            import plateau:plugin/clock@0.2.0;
            import plateau:clock/clock@0.3.0;
        ",
        imports: { default: async | trappable },
    });
}
use gen_::plateau::{clock::clock as v0_3, plugin0_1_0::clock as v0_1, plugin0_2_0::clock as v0_2};

/// What `clock` sees of the store.
pub(crate) struct ClockView<'a> {
    pub call: &'a CallContext,
}

struct HasClock;

impl HasData for HasClock {
    type Data<'a> = ClockView<'a>;
}

pub(crate) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    view: fn(&mut T) -> ClockView<'_>,
) -> wasmtime::Result<()> {
    v0_1::add_to_linker::<T, HasClock>(linker, view)?;
    v0_2::add_to_linker::<T, HasClock>(linker, view)?;
    v0_3::add_to_linker::<T, HasClock>(linker, view)
}

impl ClockView<'_> {
    fn now_millis(&self) -> u64 {
        self.call.plugin.services.clock.now_millis()
    }
}

/// The traits of one WIT version's bindings, on the logic above.
macro_rules! wit_impls {
    ($($wit:ident),+) => {$(
        impl $wit::Host for ClockView<'_> {
            async fn now_millis(&mut self) -> wasmtime::Result<u64> {
                Ok(ClockView::now_millis(self))
            }
        }
    )+};
}

wit_impls!(v0_1, v0_2, v0_3);
