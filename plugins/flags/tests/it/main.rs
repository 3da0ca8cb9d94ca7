//! Integration tests of the flags plugin: one binary, data-driven tables per area. The
//! evaluation core is tested directly (`definition` to `semver`); the plugin's HTTP API through
//! the SDK's in-memory host (`client`, `manage`, `evaluators_api`, `ofrep_api`, `rollout_api`).
//!
//! The cases restate, in our own tables, the facts (inputs and expected outcomes) of flagd's
//! published acceptance suites (flagd-testbed's gherkin features), the flagd docs and the OFREP
//! OpenAPI document.

mod client;
mod definition;
mod evaluate;
mod evaluators_api;
mod fractional;
mod jsonlogic;
mod manage;
mod ofrep;
mod ofrep_api;
mod rollout_api;
mod semver;

use plateau_plugin_flags::{FlagSet, Resolution};
use serde_json::{Map, Value, json};
use std::sync::OnceLock;

/// The evaluation time used throughout: 2023-11-14T22:13:20Z.
pub const NOW: i64 = 1_700_000_000;

/// The shared fixture flag set, `flags.json`.
pub fn flags() -> &'static FlagSet {
    static FLAGS: OnceLock<FlagSet> = OnceLock::new();
    FLAGS.get_or_init(|| {
        FlagSet::from_json(include_str!("flags.json")).expect("the fixture flag set is valid")
    })
}

/// Parses a JSON literal from a test table.
pub fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("bad JSON in a test table: {text}: {e}"))
}

/// The parts of a resolution the tables compare: `value` and `variant` when present, `reason`,
/// and `error` (the code) when there is one. Metadata is checked separately.
pub fn summary(resolution: &Resolution) -> Value {
    let mut out = Map::new();
    if let Some(value) = &resolution.value {
        out.insert("value".into(), value.clone());
    }
    if let Some(variant) = &resolution.variant {
        out.insert("variant".into(), json!(variant));
    }
    out.insert("reason".into(), json!(resolution.reason));
    if let Some(error) = &resolution.error {
        out.insert("error".into(), json!(error.code));
    }
    Value::Object(out)
}
