//! The `secrets` capability: the host's [`Sealer`](crate::secrets::Sealer),
//! bound to the plugin and a namespace under the same rules as `kv`.

use wasmtime::component::{HasSelf, Linker};

use crate::bindings::v0_2::plateau::plugin::kv::Namespace;
use crate::bindings::v0_2::plateau::plugin::secrets as v0_2;
use crate::host::kv::Namespace0;
use crate::overlay::KvError;
use crate::state::State;
use crate::storage::BucketId;

/// The largest value one call seals or opens.
const MAX_PLAINTEXT: usize = 64 << 10;

pub(crate) fn add_to_linker(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    v0_2::add_to_linker::<State, HasSelf<State>>(linker, |s| s)
}

/// What a sealed value is bound to: the plugin and the namespace.
fn context(bucket: &BucketId) -> String {
    let ns = match &bucket.namespace {
        crate::storage::Namespace::Organization(id) => id.as_str(),
        crate::storage::Namespace::Global => "",
    };
    format!("{}\u{1f}{ns}", bucket.plugin)
}

impl State {
    fn secret_context(&self, ns: Namespace) -> Result<String, String> {
        match self.open_bucket(Namespace0::from(ns)) {
            Ok(bucket) => Ok(context(&bucket)),
            Err(KvError::AccessDenied(m)) => Err(m),
            Err(other) => Err(format!("{other:?}")),
        }
    }
}

impl v0_2::Host for State {
    async fn seal(
        &mut self,
        ns: Namespace,
        plaintext: Vec<u8>,
    ) -> wasmtime::Result<Result<Vec<u8>, String>> {
        if plaintext.len() > MAX_PLAINTEXT {
            return Ok(Err(format!("a secret is at most {MAX_PLAINTEXT} bytes")));
        }
        Ok(self.secret_context(ns).and_then(|ctx| {
            self.plugin
                .services
                .sealer
                .seal(&ctx, &plaintext)
                .map_err(|e| e.to_string())
        }))
    }

    async fn open(
        &mut self,
        ns: Namespace,
        sealed: Vec<u8>,
    ) -> wasmtime::Result<Result<Vec<u8>, String>> {
        Ok(self.secret_context(ns).and_then(|ctx| {
            self.plugin
                .services
                .sealer
                .open(&ctx, &sealed)
                .map_err(|e| e.to_string())
        }))
    }
}
