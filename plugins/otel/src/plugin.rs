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

use crate::{ingest, retention, signals, tokens, traces};

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
            .post("/otel/ingest/v1/metrics", ingest::metrics)
            .public()
            .summary("OTLP/HTTP: export metric points (protobuf or JSON, gzip); the ingest token in plateau-otel-token")
            .post("/otel/ingest/v1/logs", ingest::logs)
            .public()
            .summary("OTLP/HTTP: export log records (protobuf or JSON, gzip); the ingest token in plateau-otel-token")
            .get("/otel/traces", traces::list)
            .scope("otel:read")
            .summary("List traces with a span matching service, name, status, duration and attr.{key} filters, newest first")
            .get("/otel/traces/{trace_id}", traces::get)
            .scope("otel:read")
            .summary("Get a trace's spans as a tree")
            .get("/otel/metrics", signals::metrics)
            .scope("otel:read")
            .summary("List metric series by name, service and attr.{key} filters, with their newest points")
            .get("/otel/logs", signals::logs)
            .scope("otel:read")
            .summary("List log records by traceId, service, minSeverity and attr.{key} filters, newest first")
            .get("/otel/tokens", tokens::list)
            .scope("otel:read")
            .summary("List the organisation's OTLP ingest tokens")
            .post("/otel/tokens", tokens::create)
            .scope("otel:write")
            .summary("Create an ingest token for the project; answers it once")
            .delete("/otel/tokens/{id}", tokens::delete)
            .scope("otel:write")
            .summary("Revoke an ingest token")
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
