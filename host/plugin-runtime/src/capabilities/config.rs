//! The `config` capability: the values the operator set for the plugin.

use wasmtime::component::{HasData, Linker};

use crate::context::CallContext;

mod gen_ {
    wasmtime::component::bindgen!({
        path: ["../../wit/legacy/plugin@0.1.0", "../../wit/legacy/plugin@0.2.0", "../../wit/deps/config"],
        interfaces: "
            import plateau:plugin/config@0.1.0;
            import plateau:plugin/config@0.2.0;
            import plateau:config/config@0.3.0;
        ",
        imports: { default: async | trappable },
    });
}
use gen_::plateau::{
    config::config as v0_3, plugin0_1_0::config as v0_1, plugin0_2_0::config as v0_2,
};

/// What `config` sees of the store.
pub(crate) struct ConfigView<'a> {
    pub call: &'a CallContext,
}

struct HasConfig;

impl HasData for HasConfig {
    type Data<'a> = ConfigView<'a>;
}

pub(crate) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    view: fn(&mut T) -> ConfigView<'_>,
) -> wasmtime::Result<()> {
    v0_1::add_to_linker::<T, HasConfig>(linker, view)?;
    v0_2::add_to_linker::<T, HasConfig>(linker, view)?;
    v0_3::add_to_linker::<T, HasConfig>(linker, view)
}

impl ConfigView<'_> {
    fn get(&self, key: &str) -> Option<String> {
        self.call.plugin.settings.config.get(key).cloned()
    }

    fn get_all(&self) -> Vec<(String, String)> {
        let config = &self.call.plugin.settings.config;
        config.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }
}

/// The traits of one WIT version's bindings, on the logic above.
macro_rules! wit_impls {
    ($($wit:ident),+) => {$(
        impl $wit::Host for ConfigView<'_> {
            async fn get(&mut self, key: String) -> wasmtime::Result<Option<String>> {
                Ok(ConfigView::get(self, &key))
            }

            async fn get_all(&mut self) -> wasmtime::Result<Vec<(String, String)>> {
                Ok(ConfigView::get_all(self))
            }
        }
    )+};
}

wit_impls!(v0_1, v0_2, v0_3);
