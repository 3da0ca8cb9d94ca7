//! Plateau's checks plugin: URL, API and heartbeat checks that run on
//! durable schedules, keep a history of results, move between the states
//! up, degraded and down, and alert by email and signed webhook only when
//! the state changes.
//!
//! Two layers:
//! - the core ([`spec`], [`status`], [`jsonpath`], [`assertions`],
//!   [`verdict`], [`health`], [`ids`]): a check's configuration and its
//!   validation, expected status ranges, a JSONPath subset, assertions,
//!   the verdict of one run, and the state machine with retries;
//! - [`plugin`]: the component, [`ChecksPlugin`], whose routes and jobs
//!   store checks in the SDK's key-value buckets, probe targets through the
//!   host's egress guard and deliver alerts.
//!
//! **Architecture Invariant:** the core is pure: no I/O, no clock, and it
//! does not know the SDK; times and responses are parameters. Only
//! [`plugin`] talks to the host, and only through `plateau-sdk`.
//!
//! ```
//! use plateau_plugin_checks::assertions::{Assertion, Observed, first_failure};
//! use serde_json::json;
//!
//! let check = Assertion::from_json(&json!(
//!     {"type": "jsonPath", "path": "$.data.items[0].id", "operator": "equals", "value": "a1"}
//! )).unwrap();
//! let body = br#"{"data": {"items": [{"id": "b2"}]}}"#;
//! let seen = Observed { status: 200, headers: &[], body, total_ms: 40 };
//! let failed = first_failure(&[check], &seen).unwrap();
//! assert_eq!(failed.actual, json!("b2"));
//! ```

pub mod assertions;
pub mod health;
pub mod ids;
pub mod jsonpath;
pub mod plugin;
pub mod spec;
pub mod status;
pub mod verdict;

pub use plugin::ChecksPlugin;

plateau_sdk::export_plugin!(ChecksPlugin);
