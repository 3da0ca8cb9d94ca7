//! Plateau's heartbeats plugin: a job pings an unguessable URL when it runs;
//! when the pings stop, the heartbeat goes late, then down, and alerts by
//! email and by signed webhook. Healthchecks.io's model, as a sandboxed
//! component.
//!
//! Layers:
//! - the pure core: [`schedule`] (period or 5-field cron in an IANA time
//!   zone, daylight saving time handled) and [`state`] (the state machine
//!   and which changes alert);
//! - [`plugin`]: the component, [`HeartbeatsPlugin`], with the management
//!   API ([`api`], [`input`]), the public ping routes ([`ping`]), the stored
//!   shapes ([`record`], [`store`]) and the alerts ([`alerts`]).
//!
//! **Architecture Invariant:** the core is pure: no storage, no clock of its
//! own (the time is a parameter), no SDK. Only the plugin layer talks to the
//! host, and only through `plateau-sdk`.
//!
//! **Architecture Invariant:** a change of state is decided once, in the
//! compare-and-swap that writes it, and its event, email request and
//! webhook job commit with that write: one alert per change.
//!
//! ```
//! use plateau_plugin_heartbeats::schedule::Schedule;
//! use plateau_plugin_heartbeats::state::{self, PingKind, Rules, State, Status};
//!
//! let rules = Rules { schedule: Schedule::period(3600).unwrap(), grace_ms: 600_000 };
//! let mut status = Status::new();
//! state::ping(&mut status, PingKind::Success, 0);
//! assert_eq!(rules.target(&status, 3_600_000).0, State::Late);
//! assert_eq!(rules.target(&status, 4_200_000).0, State::Down);
//! ```

pub mod alerts;
pub mod api;
pub mod input;
pub mod ping;
pub mod plugin;
pub mod record;
pub mod schedule;
pub mod state;
pub mod store;

pub use plugin::HeartbeatsPlugin;

plateau_sdk::export_plugin!(HeartbeatsPlugin);
