//! The `config` capability: the values the operator set for the plugin.

use wasmtime::component::{HasSelf, Linker};

use crate::bindings::v0_1::plateau::plugin::config as v0_1;
use crate::state::State;

pub(crate) fn add_to_linker(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    v0_1::add_to_linker::<State, HasSelf<State>>(linker, |s| s)
}

impl v0_1::Host for State {
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
