//! The `log` capability: guest log lines go to `tracing`, tagged with the
//! plugin's name.

use wasmtime::component::{HasData, Linker};

use crate::context::CallContext;

mod gen_ {
    wasmtime::component::bindgen!({
        path: ["../../wit/legacy/plugin@0.1.0", "../../wit/legacy/plugin@0.2.0", "../../wit/deps/log"],
        interfaces: "
            import plateau:plugin/log@0.1.0;
            import plateau:plugin/log@0.2.0;
            import plateau:log/log@0.3.0;
        ",
        imports: { default: async | trappable },
    });
}
use gen_::plateau::{log::log as v0_3, plugin0_1_0::log as v0_1, plugin0_2_0::log as v0_2};

/// Longer messages are cut to this many bytes.
const MAX_MESSAGE: usize = 4096;

/// What `log` sees of the store.
pub(crate) struct LogView<'a> {
    pub call: &'a CallContext,
}

struct HasLog;

impl HasData for HasLog {
    type Data<'a> = LogView<'a>;
}

pub(crate) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    view: fn(&mut T) -> LogView<'_>,
) -> wasmtime::Result<()> {
    v0_1::add_to_linker::<T, HasLog>(linker, view)?;
    v0_2::add_to_linker::<T, HasLog>(linker, view)?;
    v0_3::add_to_linker::<T, HasLog>(linker, view)
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

/// A level, whatever the WIT version.
enum Level {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

impl LogView<'_> {
    fn log(&self, level: Level, message: &str) {
        let plugin = self.call.plugin.name.as_str();
        let message = truncate(message);
        match level {
            Level::Trace => tracing::trace!(plugin, "{message}"),
            Level::Debug => tracing::debug!(plugin, "{message}"),
            Level::Info => tracing::info!(plugin, "{message}"),
            Level::Warn => tracing::warn!(plugin, "{message}"),
            Level::Error => tracing::error!(plugin, "{message}"),
        }
    }
}

/// The traits of one WIT version's bindings, on the logic above.
macro_rules! wit_impls {
    ($($wit:ident),+) => {$(
        impl $wit::Host for LogView<'_> {
            async fn log(&mut self, level: $wit::Level, message: String) -> wasmtime::Result<()> {
                let level = match level {
                    $wit::Level::Trace => Level::Trace,
                    $wit::Level::Debug => Level::Debug,
                    $wit::Level::Info => Level::Info,
                    $wit::Level::Warn => Level::Warn,
                    $wit::Level::Error => Level::Error,
                };
                LogView::log(self, level, &message);
                Ok(())
            }
        }
    )+};
}

wit_impls!(v0_1, v0_2, v0_3);
