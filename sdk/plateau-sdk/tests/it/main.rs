//! The SDK's native tests, one binary: the pure parts (errors, routing,
//! JSON, query strings, pagination) and the in-memory host stand-ins.

mod error;
mod json;
mod query;
mod router;

// These use the in-memory host stand-ins of `plateau_sdk::testing`, which
// exist only in native builds.
#[cfg(not(target_arch = "wasm32"))]
mod host;
#[cfg(not(target_arch = "wasm32"))]
mod jobs;
#[cfg(not(target_arch = "wasm32"))]
mod kv;
#[cfg(not(target_arch = "wasm32"))]
mod pagination;
