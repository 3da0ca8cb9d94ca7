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

use store::{EvaluatorRecord, FlagRecord};

/// The OFREP routes in the OpenAPI document: a foreign protocol, whose
/// bodies and errors the host documents by their paths.
const OFREP: &str = "The OpenFeature Remote Evaluation Protocol, for OpenFeature's OFREP \
     providers: the body is `{\"context\": {...}}` (an absent body is an empty context), \
     answers and errors are OFREP's own (`errorCode`), not problem documents.";

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
            .description(
                "Each flag's flagd definition (`state`, `variants`, `defaultVariant`, \
                 `targeting`, `metadata`) with its key, version and etag, paginated.",
            )
            .response_page::<FlagRecord>()
            .get("/flags/{key}", flags::get)
            .scope("flags:read")
            .summary("Get a flag")
            .description("With an `ETag`; `If-None-Match` with the current one answers 304.")
            .response::<FlagRecord>(200)
            .put("/flags/{key}", flags::put)
            .scope("flags:write")
            .summary("Create or replace a flag from its flagd definition")
            .description(
                "The body is one flag of a flagd flag set: `state`, `variants`, \
                 `defaultVariant`, optional JsonLogic `targeting` (which may use shared \
                 evaluators with `$ref`) and `metadata`. 201 when created, 200 when replaced.",
            )
            .response::<FlagRecord>(201)
            .response::<FlagRecord>(200)
            .delete("/flags/{key}", flags::delete)
            .scope("flags:write")
            .summary("Delete a flag")
            .description("Evaluating it answers `FLAG_NOT_FOUND` from then on.")
            .empty_response(204)
            .get("/flags/evaluators", evaluators::list)
            .scope("flags:read")
            .summary("List the shared evaluators of a project and environment")
            .description("Each evaluator's JsonLogic rule, version and etag, paginated.")
            .response_page::<EvaluatorRecord>()
            .get("/flags/evaluators/{name}", evaluators::get)
            .scope("flags:read")
            .summary("Get a shared evaluator")
            .description("With an `ETag`; `If-None-Match` with the current one answers 304.")
            .response::<EvaluatorRecord>(200)
            .put("/flags/evaluators/{name}", evaluators::put)
            .scope("flags:write")
            .summary("Create or replace a shared evaluator used with $ref")
            .description(
                "The body is a JsonLogic rule; flags refer to it as `{\"$ref\": name}`. 201 \
                 when created, 200 when replaced.",
            )
            .response::<EvaluatorRecord>(201)
            .response::<EvaluatorRecord>(200)
            .delete("/flags/evaluators/{name}", evaluators::delete)
            .scope("flags:write")
            .summary("Delete a shared evaluator no flag uses")
            .description("409 while a flag refers to it.")
            .empty_response(204)
            .post(OFREP_SINGLE, evaluation::evaluate_one)
            .scope("flags:evaluate")
            .summary("OFREP: evaluate one flag")
            .description(OFREP)
            .post(OFREP_BULK, evaluation::evaluate_all)
            .scope("flags:evaluate")
            .summary("OFREP: evaluate every flag, with ETag and If-None-Match")
            .description(OFREP)
            .post(ENV_OFREP_SINGLE, evaluation::evaluate_one)
            .scope("flags:evaluate")
            .summary("OFREP: evaluate one flag of the environment in the path")
            .description(OFREP)
            .post(ENV_OFREP_BULK, evaluation::evaluate_all)
            .scope("flags:evaluate")
            .summary("OFREP: evaluate every flag of the environment in the path")
            .description(OFREP)
    }
}
