//! The `clock` capability: the host's [`Clock`](crate::Clock).

use wasmtime::component::{HasSelf, Linker};

use crate::bindings::v0_1::plateau::plugin::clock as v0_1;
use crate::state::State;

pub(crate) fn add_to_linker(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    v0_1::add_to_linker::<State, HasSelf<State>>(linker, |s| s)
}

impl v0_1::Host for State {
    async fn now_millis(&mut self) -> wasmtime::Result<u64> {
        Ok(self.plugin.services.clock.now_millis())
    }
}
