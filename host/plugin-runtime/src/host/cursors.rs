//! The `cursors` capability: the host's [`CursorCodec`](crate::CursorCodec),
//! bound to the plugin and the caller's organisation.

use wasmtime::component::{HasSelf, Linker};

use crate::bindings::v0_1::plateau::plugin::cursors as v0_1;
use crate::bindings::v0_2::plateau::plugin::cursors as v0_2;
use crate::cursors::CursorScope;
use crate::state::State;

pub(crate) fn add_to_linker(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    v0_1::add_to_linker::<State, HasSelf<State>>(linker, |s| s)?;
    v0_2::add_to_linker::<State, HasSelf<State>>(linker, |s| s)
}

impl State {
    pub(crate) fn cursor_scope(&self) -> CursorScope {
        CursorScope {
            plugin: self.plugin.name.clone(),
            organization: self.caller_org().map(String::from),
        }
    }
}

/// Guest lists live in their own namespace, apart from the runtime's kv lists.
fn guest_list(list: &str) -> String {
    format!("app:{list}")
}
/// The traits of one WIT version's bindings, on the logic above.
macro_rules! wit_impls {
    ($module:ident, $version:ident) => {
        mod $module {
            use super::$version as wit;
            use super::*;

            impl wit::Host for State {
                async fn encode(
                    &mut self,
                    list: String,
                    position: String,
                ) -> wasmtime::Result<String> {
                    let scope = self.cursor_scope();
                    Ok(self
                        .plugin
                        .services
                        .cursors
                        .encode(&scope, &guest_list(&list), &position))
                }

                async fn decode(
                    &mut self,
                    list: String,
                    cursor: String,
                ) -> wasmtime::Result<Result<String, String>> {
                    let scope = self.cursor_scope();
                    Ok(self
                        .plugin
                        .services
                        .cursors
                        .decode(&scope, &guest_list(&list), &cursor)
                        .map_err(|e| e.to_string()))
                }
            }
        }
    };
}

wit_impls!(impls_v0_1, v0_1);
wit_impls!(impls_v0_2, v0_2);
