//! The one place that calls the host: WIT imports in a component, in-memory
//! stand-ins in a native build.
//!
//! **Architecture Invariant:** nothing outside `sys` and `guest` touches the
//! generated bindings, so the rest of the SDK, and every plugin's logic,
//! compiles and runs natively for unit tests.

#[cfg(target_arch = "wasm32")]
mod wasm;
#[cfg(target_arch = "wasm32")]
pub(crate) use wasm::*;

#[cfg(not(target_arch = "wasm32"))]
pub(crate) mod native;
#[cfg(not(target_arch = "wasm32"))]
pub(crate) use native::*;
