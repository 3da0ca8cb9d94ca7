//! The `cursors` capability: the host's [`CursorCodec`](crate::CursorCodec),
//! bound to the plugin and the caller's organisation.

use wasmtime::component::{HasData, Linker};

use crate::context::CallContext;

mod gen_ {
    wasmtime::component::bindgen!({
        path: ["../../wit/legacy/plugin@0.1.0", "../../wit/legacy/plugin@0.2.0", "../../wit/deps/cursors"],
        interfaces: "
            import plateau:plugin/cursors@0.1.0;
            import plateau:plugin/cursors@0.2.0;
            import plateau:cursors/cursors@0.3.0;
        ",
        imports: { default: async | trappable },
    });
}
use gen_::plateau::{
    cursors::cursors as v0_3, plugin0_1_0::cursors as v0_1, plugin0_2_0::cursors as v0_2,
};

/// What `cursors` sees of the store.
pub(crate) struct CursorsView<'a> {
    pub call: &'a CallContext,
}

struct HasCursors;

impl HasData for HasCursors {
    type Data<'a> = CursorsView<'a>;
}

pub(crate) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    view: fn(&mut T) -> CursorsView<'_>,
) -> wasmtime::Result<()> {
    v0_1::add_to_linker::<T, HasCursors>(linker, view)?;
    v0_2::add_to_linker::<T, HasCursors>(linker, view)?;
    v0_3::add_to_linker::<T, HasCursors>(linker, view)
}

/// Guest lists live in their own namespace, apart from the runtime's kv lists.
fn guest_list(list: &str) -> String {
    format!("app:{list}")
}

impl CursorsView<'_> {
    fn encode(&self, list: &str, position: &str) -> String {
        let scope = self.call.cursor_scope();
        let codec = &self.call.plugin.services.cursors;
        codec.encode(&scope, &guest_list(list), position)
    }

    fn decode(&self, list: &str, cursor: &str) -> Result<String, String> {
        let scope = self.call.cursor_scope();
        let codec = &self.call.plugin.services.cursors;
        codec
            .decode(&scope, &guest_list(list), cursor)
            .map_err(|e| e.to_string())
    }
}

/// The traits of one WIT version's bindings, on the logic above.
macro_rules! wit_impls {
    ($($wit:ident),+) => {$(
        impl $wit::Host for CursorsView<'_> {
            async fn encode(&mut self, list: String, position: String) -> wasmtime::Result<String> {
                Ok(CursorsView::encode(self, &list, &position))
            }

            async fn decode(
                &mut self,
                list: String,
                cursor: String,
            ) -> wasmtime::Result<Result<String, String>> {
                Ok(CursorsView::decode(self, &list, &cursor))
            }
        }
    )+};
}

wit_impls!(v0_1, v0_2, v0_3);
