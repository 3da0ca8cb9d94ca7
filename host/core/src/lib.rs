//! Plateau's domain vocabulary, shared by the store, the HTTP API, the plugin
//! runtime and the registry: scopes, plans, roles, ids, secrets, time and the rules of rewards.
//!
//! Nothing here does I/O.

pub mod anomaly;
pub mod id;
pub mod plan;
pub mod prices;
pub mod rewards;
pub mod role;
pub mod scope;
pub mod secret;
pub mod time;

pub use plan::Plan;
pub use role::Role;
pub use scope::{CORE_SCOPES, ScopeInfo, Scopes};
