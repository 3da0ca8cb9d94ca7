//! Plateau's log drains plugin (`/log-drains`): an organisation's app logs
//! and, optionally, its event timeline, filtered by source, app and level,
//! forwarded in batches to an HTTPS endpoint (gzipped NDJSON, signed per
//! Standard Webhooks) or a syslog server (RFC 5424, octet-counted, over
//! TCP or TLS), with retries, a bounded buffer and a delivery status per
//! drain.
//!
//! Layers:
//! - the pure core: [`input`] (a drain's fields and destination URL),
//!   [`level`] (the level of a line), [`record`] (stored shapes, keys, the
//!   bounded buffer, the backoff) and [`format`] (NDJSON, gzip, RFC 5424
//!   frames);
//! - [`secret`] (the signing secret, sealed), [`forward`] (a drain's job:
//!   read after the cursor through the `logs` capability, buffer, send
//!   through `outbound-http` or `tcp`) and [`api`] (answering [`views`]), wired in [`plugin`].
//!
//! **Architecture Invariants:** a drain's cursor and buffer change in one
//! write, so a line is read into the buffer once; a batch leaves the
//! buffer only after its destination acknowledged it; the buffer never
//! holds more than [`record::MAX_BUFFERED_LINES`] lines or
//! [`record::MAX_BUFFERED_BYTES`] bytes, the oldest going first and
//! counted as `dropped`.

pub mod api;
pub mod format;
pub mod forward;
pub mod input;
pub mod level;
pub mod plugin;
pub mod record;
pub mod secret;
pub mod views;

pub use plugin::LogDrainsPlugin;

plateau_sdk::export_plugin!(LogDrainsPlugin);
