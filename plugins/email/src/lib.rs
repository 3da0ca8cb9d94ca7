//! Plateau's email relay: each organisation brings its own SMTP server and
//! the relay queues, sends and records its messages, within a per-plan rate
//! limit, as a sandboxed WebAssembly component (`wasm32-wasip2`).
//!
//! Two layers:
//! - the rules, pure and tested natively: [`address`] (mailboxes and
//!   allowed-sender patterns), [`message`] (the send request and its
//!   validation: no header injection, sizes), [`limits`] (plans, windows,
//!   retry backoff), [`time`] (RFC 3339 bounds, ULID ids) and [`keys`] (the
//!   storage layout, and time ranges as key prefixes);
//! - [`plugin`]: the component, [`EmailPlugin`], whose routes and hooks
//!   store through the SDK's key-value buckets, seal the SMTP password with
//!   the host's `secrets`, schedule deliveries as durable jobs and submit
//!   through the host's `smtp` capability.
//!
//! **Architecture Invariant:** the plugin never opens a socket and never
//! stores or returns the SMTP password in clear: it is sealed for the
//! organisation when configured and opened only inside a delivery job.
//!
//! ```
//! use plateau_plugin_email::address::{Mailbox, SenderPattern};
//!
//! let from = Mailbox::parse("Billing <billing@example.com>").unwrap();
//! assert!(SenderPattern::parse("*@example.com").unwrap().allows(&from));
//! assert!(Mailbox::parse("ann@example.com\r\nBcc: eve@example.net").is_err());
//! ```

pub mod address;
pub mod keys;
pub mod limits;
pub mod message;
pub mod plugin;
pub mod time;

pub use plugin::EmailPlugin;

plateau_sdk::export_plugin!(EmailPlugin);
