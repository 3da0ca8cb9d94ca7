//! The feature-flags plugin: its self-description and route table. The handlers live in the
//! modules below; everything they store goes through the SDK's key-value buckets.
//!
//! | Route | Scope |
//! |---|---|
//! | `GET /flags`, `GET /flags/{key}` | `flags:read` |
//! | `PUT /flags/{key}`, `DELETE /flags/{key}` | `flags:write` |
//! | `GET /flags/evaluators`, `GET /flags/evaluators/{name}` | `flags:read` |
//! | `PUT /flags/evaluators/{name}`, `DELETE /flags/evaluators/{name}` | `flags:write` |
//! | `POST /flags/ofrep/v1/evaluate/flags[/{key}]` | `flags:evaluate` |
//! | `POST /flags/environments/{environment}/ofrep/v1/evaluate/flags[/{key}]` | `flags:evaluate` |

pub mod evaluation;
pub mod evaluators;
pub mod flags;
pub mod scope;
pub mod store;

use plateau_sdk::{Capability, Description, Plugin, Router};

/// The plugin type handed to [`plateau_sdk::export_plugin!`].
pub struct FlagsPlugin;

/// The OFREP routes below the two OFREP base URLs, `/flags` and an environment's (constants,
/// as the route table is built in every instance).
const OFREP_BULK: &str = "/flags/ofrep/v1/evaluate/flags";
const OFREP_SINGLE: &str = "/flags/ofrep/v1/evaluate/flags/{key}";
const ENV_OFREP_BULK: &str = "/flags/environments/{environment}/ofrep/v1/evaluate/flags";
const ENV_OFREP_SINGLE: &str = "/flags/environments/{environment}/ofrep/v1/evaluate/flags/{key}";

impl Plugin for FlagsPlugin {
    fn describe() -> Description {
        Description::new("flags", env!("CARGO_PKG_VERSION"))
            .prefix("/flags")
            .scope(
                "flags:read",
                "Read feature-flag definitions and shared evaluators",
            )
            .scope(
                "flags:write",
                "Create, replace and delete feature flags and shared evaluators",
            )
            .scope(
                "flags:evaluate",
                "Evaluate feature flags over OFREP, as an OpenFeature provider does",
            )
            .capabilities(&[
                Capability::Kv,
                Capability::Events,
                Capability::Clock,
                Capability::Cursors,
            ])
    }

    fn router() -> Router {
        Router::new()
            .get("/flags", flags::list)
            .scope("flags:read")
            .summary("List the flags of a project and environment")
            .get("/flags/{key}", flags::get)
            .scope("flags:read")
            .summary("Get a flag")
            .put("/flags/{key}", flags::put)
            .scope("flags:write")
            .summary("Create or replace a flag from its flagd definition")
            .delete("/flags/{key}", flags::delete)
            .scope("flags:write")
            .summary("Delete a flag")
            .get("/flags/evaluators", evaluators::list)
            .scope("flags:read")
            .summary("List the shared evaluators of a project and environment")
            .get("/flags/evaluators/{name}", evaluators::get)
            .scope("flags:read")
            .summary("Get a shared evaluator")
            .put("/flags/evaluators/{name}", evaluators::put)
            .scope("flags:write")
            .summary("Create or replace a shared evaluator used with $ref")
            .delete("/flags/evaluators/{name}", evaluators::delete)
            .scope("flags:write")
            .summary("Delete a shared evaluator no flag uses")
            .post(OFREP_SINGLE, evaluation::evaluate_one)
            .scope("flags:evaluate")
            .summary("OFREP: evaluate one flag")
            .post(OFREP_BULK, evaluation::evaluate_all)
            .scope("flags:evaluate")
            .summary("OFREP: evaluate every flag, with ETag and If-None-Match")
            .post(ENV_OFREP_SINGLE, evaluation::evaluate_one)
            .scope("flags:evaluate")
            .summary("OFREP: evaluate one flag of the environment in the path")
            .post(ENV_OFREP_BULK, evaluation::evaluate_all)
            .scope("flags:evaluate")
            .summary("OFREP: evaluate every flag of the environment in the path")
    }
}
