//! The OpenTelemetry plugin: its self-description, route table, the
//! timeline event it hears and its job.
//!
//! | Route | Access |
//! |---|---|
//! | `POST /otel/ingest/v1/traces`, `/v1/metrics`, `/v1/logs` | public: the ingest token in `plateau-otel-token` is the credential |
//! | `GET /otel/traces`, `GET /otel/traces/{trace_id}`, `GET /otel/metrics`, `GET /otel/logs` | `otel:read` |
//! | `GET /otel/tokens` | `otel:read` |
//! | `POST /otel/tokens`, `DELETE /otel/tokens/{id}` | `otel:write` |
//!
//! Events: `organization.plan_changed`, which sets the retention.
//! Jobs: `retention` (hourly, per organisation) and `retention-more`.

use plateau_sdk::jobs::Job;
use plateau_sdk::{Bucket, Capability, Description, Event, Plugin, Router, log};

use crate::tokens::{TokenInput, TokenView};
use crate::views::{LogView, SeriesView, TraceSummary, TraceView};
use crate::{ingest, retention, signals, tokens, traces};

/// The OTLP/HTTP routes in the OpenAPI document: a foreign protocol,
/// whose bodies and errors the host documents by their paths.
const OTLP: &str = "OpenTelemetry's OTLP/HTTP: an Export*ServiceRequest as protobuf \
     (`application/x-protobuf`) or OTLP/JSON, optionally gzip-encoded, answered in the same \
     encoding. The credential is an ingest token (`POST /otel/tokens`) in the \
     `plateau-otel-token` header, not an API token.";

/// The plugin type handed to [`plateau_sdk::export_plugin!`].
pub struct OtelPlugin;

impl Plugin for OtelPlugin {
    fn describe() -> Description {
        Description::new("otel", env!("CARGO_PKG_VERSION"))
            .prefix("/otel")
            .scope(
                "otel:read",
                "Query traces, metrics and logs; list ingest tokens",
            )
            .scope("otel:write", "Create and revoke OTLP ingest tokens")
            .capabilities(&[
                Capability::Kv,
                Capability::Events,
                Capability::Log,
                Capability::Clock,
                Capability::Scheduler,
            ])
            .subscribe("organization.plan_changed")
    }

    fn router() -> Router {
        Router::new()
            .post("/otel/ingest/v1/traces", ingest::traces)
            .public()
            .summary("OTLP/HTTP: export spans (protobuf or JSON, gzip); the ingest token in plateau-otel-token")
            .description(OTLP)
            .post("/otel/ingest/v1/metrics", ingest::metrics)
            .public()
            .summary("OTLP/HTTP: export metric points (protobuf or JSON, gzip); the ingest token in plateau-otel-token")
            .description(OTLP)
            .post("/otel/ingest/v1/logs", ingest::logs)
            .public()
            .summary("OTLP/HTTP: export log records (protobuf or JSON, gzip); the ingest token in plateau-otel-token")
            .description(OTLP)
            .get("/otel/traces", traces::list)
            .scope("otel:read")
            .summary("List traces with a span matching service, name, status, duration and attr.{key} filters, newest first")
            .description(
                "Each trace's root span, services, start, duration and span and error counts, \
                 over the plan's retention.",
            )
            .response_page::<TraceSummary>()
            .get("/otel/traces/{trace_id}", traces::get)
            .scope("otel:read")
            .summary("Get a trace's spans as a tree")
            .description(
                "The trace's summary and `spans`, each with its `children` sorted by start time; \
                 404 when no span of it is kept.",
            )
            .response::<TraceView>(200)
            .get("/otel/metrics", signals::metrics)
            .scope("otel:read")
            .summary("List metric series by name, service and attr.{key} filters, with their newest points")
            .description("Each series' kind, unit, attributes and newest points.")
            .response_page::<SeriesView>()
            .get("/otel/logs", signals::logs)
            .scope("otel:read")
            .summary("List log records by traceId, service, minSeverity and attr.{key} filters, newest first")
            .description("Each record's time, severity, body, attributes and trace context.")
            .response_page::<LogView>()
            .get("/otel/tokens", tokens::list)
            .scope("otel:read")
            .summary("List the organisation's OTLP ingest tokens")
            .description("Never their secrets: `prefix` recognises one.")
            .response_page::<TokenView>()
            .post("/otel/tokens", tokens::create)
            .scope("otel:write")
            .summary("Create an ingest token for the project; answers it once")
            .description(
                "For the token's project (a project-limited API token names it); at most 20 per \
                 organisation (409). The body may be left out.",
            )
            .optional_request::<TokenInput>()
            .response::<TokenView>(201)
            .delete("/otel/tokens/{id}", tokens::delete)
            .scope("otel:write")
            .summary("Revoke an ingest token")
            .description("The token stops working at once.")
            .empty_response(204)
    }

    fn on_event(event: &Event) -> Result<(), String> {
        if event.event_type != "organization.plan_changed" {
            return Ok(());
        }
        let plan = event
            .data_as::<plateau_sdk::serde_json::Value>()
            .ok()
            .and_then(|d| d["to"].as_str().map(str::to_owned));
        let bucket = Bucket::organization(&event.organization_id).map_err(|e| e.to_string())?;
        retention::remember_plan(&bucket, plan.as_deref()).map_err(|e| e.detail().to_owned())
    }

    fn on_job(job: &Job) -> Result<(), String> {
        if job.key.starts_with(retention::JOB) {
            retention::run(job).map_err(|e| e.detail().to_owned())
        } else {
            log::warn(&format!("unknown job {} dropped", job.key));
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_passes_the_hosts_checks() {
        let description = plateau_sdk::describe::<OtelPlugin>();
        assert_eq!(description.problems(), Vec::<String>::new());
        assert_eq!(description.subscriptions, ["organization.plan_changed"]);
    }
}
