//! The `log` capability: guest log lines go to `tracing`, tagged with the
//! plugin's name.

use wasmtime::component::{HasSelf, Linker};

use crate::bindings::v0_1::plateau::plugin::log as v0_1;
use crate::bindings::v0_2::plateau::plugin::log as v0_2;
use crate::state::State;

/// Longer messages are cut to this many bytes.
const MAX_MESSAGE: usize = 4096;

pub(crate) fn add_to_linker(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    v0_1::add_to_linker::<State, HasSelf<State>>(linker, |s| s)?;
    v0_2::add_to_linker::<State, HasSelf<State>>(linker, |s| s)
}

/// Cuts `message` to [`MAX_MESSAGE`] bytes on a character boundary.
pub(crate) fn truncate(message: &str) -> &str {
    if message.len() <= MAX_MESSAGE {
        return message;
    }
    let mut end = MAX_MESSAGE;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    &message[..end]
}
/// The traits of one WIT version's bindings, on the logic above.
macro_rules! wit_impls {
    ($module:ident, $version:ident) => {
        mod $module {
            use super::$version as wit;
            use super::*;

            impl wit::Host for State {
                async fn log(
                    &mut self,
                    level: wit::Level,
                    message: String,
                ) -> wasmtime::Result<()> {
                    let plugin = self.plugin.name.as_str();
                    let message = truncate(&message);
                    match level {
                        wit::Level::Trace => tracing::trace!(plugin, "{message}"),
                        wit::Level::Debug => tracing::debug!(plugin, "{message}"),
                        wit::Level::Info => tracing::info!(plugin, "{message}"),
                        wit::Level::Warn => tracing::warn!(plugin, "{message}"),
                        wit::Level::Error => tracing::error!(plugin, "{message}"),
                    }
                    Ok(())
                }
            }
        }
    };
}

wit_impls!(impls_v0_1, v0_1);
wit_impls!(impls_v0_2, v0_2);
