//! The pure evaluation core of Plateau's feature-flags plugin: flagd flag definitions, JsonLogic
//! targeting with flagd's operators, flagd's resolution semantics and OFREP responses.
//!
//! **Architecture Invariant:** this crate is pure. It has no I/O, no clock, no threads and no
//! async runtime, so it compiles unchanged to `wasm32-wasip2`; the current time is a parameter
//! of [`evaluate()`]. The WIT glue and the HTTP handlers live elsewhere and call in here.
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

pub use definition::{DefinitionError, Flag, FlagSet, FlagType, Metadata, State};
pub use evaluate::{ErrorCode, Reason, Resolution, ResolutionError, ValueType, evaluate};
pub use jsonlogic::Rule;
