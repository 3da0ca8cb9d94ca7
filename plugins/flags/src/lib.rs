//! Plateau's feature-flags plugin: flagd flag definitions stored per project and environment,
//! JsonLogic targeting with flagd's operators, and evaluation over OFREP for OpenFeature SDKs.
//!
//! Two layers:
//! - the evaluation core ([`definition`], [`jsonlogic`], [`evaluate()`], [`ofrep`]): flagd's
//!   definitions, targeting and resolution semantics, and OFREP's wire types;
//! - [`plugin`]: the component, [`FlagsPlugin`], whose routes store flags through the SDK's
//!   key-value buckets, record events and answer OFREP.
//!
//! **Architecture Invariant:** the evaluation core is pure. It has no I/O, no clock, no threads
//! and no async runtime, and it does not know the SDK; the current time is a parameter of
//! [`evaluate()`]. Only [`plugin`] talks to the host, and only through `plateau-sdk`.
//!
//! Where we are stricter than flagd, on purpose (flagd accepts these and fails at evaluation):
//! - an unknown operator or a `$ref` to an undefined evaluator rejects the definition, naming
//!   the field; flagd loads it and answers `PARSE_ERROR` on every evaluation;
//! - a flag with an unknown field (`defaultvariant`) is rejected rather than ignored;
//! - an OFREP `context` that is not an object is `INVALID_CONTEXT`; flagd ignores it.
//!
//! ```
//! use plateau_plugin_flags::{FlagSet, Reason};
//! use serde_json::json;
//!
//! let set = FlagSet::from_value(&json!({"flags": {"banner": {
//!     "state": "ENABLED",
//!     "variants": {"on": true, "off": false},
//!     "defaultVariant": "off",
//!     "targeting": {"if": [{"ends_with": [{"var": "email"}, "@example.com"]}, "on"]}
//! }}})).unwrap();
//! let resolution = set.evaluate("banner", &json!({"email": "ann@example.com"}), 1_700_000_000);
//! assert_eq!(resolution.value, Some(json!(true)));
//! assert_eq!(resolution.reason, Reason::TargetingMatch);
//! ```

pub mod definition;
pub mod evaluate;
pub mod jsonlogic;
pub mod ofrep;
mod path;
pub mod plugin;

pub use definition::{DefinitionError, Flag, FlagSet, FlagType, Metadata, State};
pub use evaluate::{ErrorCode, Reason, Resolution, ResolutionError, ValueType, evaluate};
pub use jsonlogic::Rule;
pub use plugin::FlagsPlugin;

plateau_sdk::export_plugin!(FlagsPlugin);
