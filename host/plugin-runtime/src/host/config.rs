//! The `config` capability: the values the operator set for the plugin.

use wasmtime::component::{HasSelf, Linker};

use crate::bindings::v0_1::plateau::plugin::config as v0_1;
use crate::bindings::v0_2::plateau::plugin::config as v0_2;
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
                async fn get(&mut self, key: String) -> wasmtime::Result<Option<String>> {
                    Ok(self.plugin.settings.config.get(&key).cloned())
                }

                async fn get_all(&mut self) -> wasmtime::Result<Vec<(String, String)>> {
                    Ok(self
                        .plugin
                        .settings
                        .config
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect())
                }
            }
        }
    };
}

wit_impls!(impls_v0_1, v0_1);
wit_impls!(impls_v0_2, v0_2);
