//! A plugin built against `plateau:plugin@0.9.0`, a WIT version no host
//! supports: the runtime must refuse it at load.

// The generated export glue is `unsafe` FFI that wit-bindgen writes; this
// file has no unsafe code of its own.
#![allow(unsafe_code)]

wit_bindgen::generate!({
    path: "wit-future",
    world: "plateau:plugin/plugin@0.9.0",
});

use exports::plateau::plugin::handler::Guest;
use plateau::plugin::log::{Level, log};

struct Future;

impl Guest for Future {
    fn describe() -> String {
        log(Level::Info, "describing from the future");
        "future".into()
    }
}

export!(Future);
