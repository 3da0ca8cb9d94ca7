//! The `secrets` capability: the host's [`Sealer`](plateau_seal::Sealer),
//! bound to the plugin and a namespace under the same rules as `kv`.

use wasmtime::component::{HasData, Linker};

use crate::context::{CallContext, GuestNamespace, guest_namespace_from};
use crate::overlay::KvError;
use crate::storage::{BucketId, Namespace};

mod gen_ {
    wasmtime::component::bindgen!({
        path: ["../../wit/legacy/plugin@0.2.0", "../../wit/deps/secrets"],
        interfaces: "
            import plateau:plugin/secrets@0.2.0;
            import plateau:secrets/secrets@0.3.0;
        ",
        imports: { default: async | trappable },
    });
}
use gen_::plateau::{plugin::secrets as v0_2, secrets::secrets as v0_3};

guest_namespace_from!(v0_2::Namespace, v0_3::Namespace);

/// The largest value one call seals or opens.
const MAX_PLAINTEXT: usize = 64 << 10;

/// What `secrets` sees of the store.
pub(crate) struct SecretsView<'a> {
    pub call: &'a CallContext,
}

struct HasSecrets;

impl HasData for HasSecrets {
    type Data<'a> = SecretsView<'a>;
}

pub(crate) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    view: fn(&mut T) -> SecretsView<'_>,
) -> wasmtime::Result<()> {
    v0_2::add_to_linker::<T, HasSecrets>(linker, view)?;
    v0_3::add_to_linker::<T, HasSecrets>(linker, view)
}

/// What a sealed value is bound to: the plugin and the namespace.
fn context(bucket: &BucketId) -> String {
    let ns = match &bucket.namespace {
        Namespace::Organization(id) => id.as_str(),
        Namespace::Global => "",
    };
    format!("{}\u{1f}{ns}", bucket.plugin)
}

impl SecretsView<'_> {
    fn context(&self, ns: GuestNamespace) -> Result<String, String> {
        match self.call.bucket(ns) {
            Ok(bucket) => Ok(context(&bucket)),
            Err(KvError::AccessDenied(m)) => Err(m),
            Err(other) => Err(format!("{other:?}")),
        }
    }

    fn seal(&self, ns: GuestNamespace, plaintext: &[u8]) -> Result<Vec<u8>, String> {
        if plaintext.len() > MAX_PLAINTEXT {
            return Err(format!("a secret is at most {MAX_PLAINTEXT} bytes"));
        }
        let sealer = &self.call.plugin.services.sealer;
        self.context(ns)
            .and_then(|ctx| sealer.seal(&ctx, plaintext).map_err(|e| e.to_string()))
    }

    fn open(&self, ns: GuestNamespace, sealed: &[u8]) -> Result<Vec<u8>, String> {
        let sealer = &self.call.plugin.services.sealer;
        self.context(ns)
            .and_then(|ctx| sealer.open(&ctx, sealed).map_err(|e| e.to_string()))
    }
}

/// The traits of one WIT version's bindings, on the logic above.
macro_rules! wit_impls {
    ($($wit:ident),+) => {$(
        impl $wit::Host for SecretsView<'_> {
            async fn seal(
                &mut self,
                ns: $wit::Namespace,
                plaintext: Vec<u8>,
            ) -> wasmtime::Result<Result<Vec<u8>, String>> {
                Ok(SecretsView::seal(self, ns.into(), &plaintext))
            }

            async fn open(
                &mut self,
                ns: $wit::Namespace,
                sealed: Vec<u8>,
            ) -> wasmtime::Result<Result<Vec<u8>, String>> {
                Ok(SecretsView::open(self, ns.into(), &sealed))
            }
        }
    )+};
}

wit_impls!(v0_2, v0_3);
