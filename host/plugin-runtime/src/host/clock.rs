//! The `clock` capability: the host's [`Clock`](crate::Clock).

use wasmtime::component::{HasSelf, Linker};

use crate::bindings::v0_1::plateau::plugin::clock as v0_1;
use crate::bindings::v0_2::plateau::plugin::clock as v0_2;
use crate::state::State;

pub(crate) fn add_to_linker(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    v0_1::add_to_linker::<State, HasSelf<State>>(linker, |s| s)?;
    v0_2::add_to_linker::<State, HasSelf<State>>(linker, |s| s)
}
/// The traits of one WIT version's bindings, on the logic above.
macro_rules! wit_impls {
    ($module:ident, $version:ident) => {
        mod $module {
            use super::$version as wit;
            use super::*;

            impl wit::Host for State {
                async fn now_millis(&mut self) -> wasmtime::Result<u64> {
                    Ok(self.plugin.services.clock.now_millis())
                }
            }
        }
    };
}

wit_impls!(impls_v0_1, v0_1);
wit_impls!(impls_v0_2, v0_2);
