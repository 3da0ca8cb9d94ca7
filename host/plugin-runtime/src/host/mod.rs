//! Host capabilities, one module each, each with its own `add_to_linker`.
//!
//! Every capability keeps its logic on [`State`] and implements the traits
//! of each supported WIT version on top of it; a guest-visible failure is a
//! WIT error value, a host failure (or the deadline) is a trap, and the two
//! never mix.

use wasmtime::component::{HasSelf, Linker};

use crate::bindings::v0_1::plateau::plugin as v0_1;
use crate::bindings::v0_2::plateau::plugin as v0_2;
use crate::state::State;

pub(crate) mod clock;
pub(crate) mod config;
pub(crate) mod cursors;
pub(crate) mod events;
pub(crate) mod http;
pub(crate) mod kv;
pub(crate) mod log;
pub(crate) mod scheduler;
pub(crate) mod secrets;
pub(crate) mod smtp;
pub(crate) mod wasi;

/// Links every capability of every supported version.
pub(crate) fn add_to_linker(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    v0_1::types::add_to_linker::<State, HasSelf<State>>(linker, |s| s)?;
    v0_2::types::add_to_linker::<State, HasSelf<State>>(linker, |s| s)?;
    kv::add_to_linker(linker)?;
    events::add_to_linker(linker)?;
    http::add_to_linker(linker)?;
    log::add_to_linker(linker)?;
    config::add_to_linker(linker)?;
    clock::add_to_linker(linker)?;
    cursors::add_to_linker(linker)?;
    scheduler::add_to_linker(linker)?;
    secrets::add_to_linker(linker)?;
    smtp::add_to_linker(linker)?;
    Ok(())
}

impl v0_1::types::Host for State {}
impl v0_2::types::Host for State {}
