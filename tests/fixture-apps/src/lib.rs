//! wasi:http/proxy apps for the apps tests, and a wasi:cli command for the
//! cron tests, each an example target built for wasm32-wasip2 by
//! `plateau-plugin-artifacts`.

#[cfg(feature = "guest")]
pub mod hello;
