//! The checks plugin: its self-description, route table and jobs. The
//! handlers live in the modules below; everything they store goes through
//! the SDK's key-value buckets, and every probe through the host's egress
//! guard.
//!
//! | Route | Access |
//! |---|---|
//! | `GET /checks`, `GET /checks/{id}` | `checks:read` |
//! | `GET /checks/{id}/results`, `GET /checks/{id}/alerts` | `checks:read` |
//! | `POST /checks`, `PATCH`/`PUT`/`DELETE /checks/{id}` | `checks:write` |
//! | `POST /checks/{id}/run` | `checks:write` |
//! | `GET`/`POST /checks/ping/{token}` | public (the token is the credential) |
//!
//! Jobs: `check:{id}` runs a check every interval (a heartbeat: when its
//! ping is overdue); `alert:{id}` delivers an alert's webhook.

pub mod alerts;
pub mod checks;
pub mod history;
pub mod ping;
pub mod records;
pub mod runner;
pub mod views;

use plateau_sdk::jobs::Job;
use plateau_sdk::{Capability, Description, Plugin, Router, log};

use records::{AlertRecord, RunResult, Trigger};
use views::{CheckView, Pinged};

use crate::spec::Spec;

/// What the ping routes say in the OpenAPI document.
const PING: &str = "The heartbeat is up, and due again one interval and its grace from now; \
     404 for a token no heartbeat has. A POST's body is ignored.";

/// The plugin type handed to [`plateau_sdk::export_plugin!`].
pub struct ChecksPlugin;

impl Plugin for ChecksPlugin {
    fn describe() -> Description {
        Description::new("checks", env!("CARGO_PKG_VERSION"))
            .prefix("/checks")
            .scope("checks:read", "Read checks, their results and alerts")
            .scope("checks:write", "Create, change, delete and run checks")
            .capabilities(&[
                Capability::Kv,
                Capability::Events,
                Capability::Http,
                Capability::Log,
                Capability::Config,
                Capability::Clock,
                Capability::Cursors,
                Capability::Scheduler,
                Capability::Secrets,
            ])
    }

    fn router() -> Router {
        Router::new()
            .get("/checks", checks::list)
            .scope("checks:read")
            .summary("List checks with their status")
            .description("Every check of the organisation in creation order, paginated.")
            .response_page::<CheckView>()
            .post("/checks", checks::create)
            .scope("checks:write")
            .summary("Create a URL, API or heartbeat check")
            .description(
                "`url` checks expect a status in time, `api` checks also `assertions` on the \
                 response, `heartbeat` checks a ping every `intervalSeconds` plus \
                 `graceSeconds`. A webhook secret is answered once, in `alerts.webhookSecret`.",
            )
            .request::<Spec>()
            .response::<CheckView>(201)
            .get("/checks/{id}", checks::get)
            .scope("checks:read")
            .summary("Get a check with its status and last result")
            .description("Its configuration, state and, for a heartbeat, its ping URL.")
            .response::<CheckView>(200)
            .patch("/checks/{id}", checks::patch)
            .scope("checks:write")
            .summary("Change a check (JSON merge patch)")
            .description(
                "A JSON merge patch (RFC 7396) of the fields `PUT` takes: `null` removes a \
                 field; the result must pass the rules of creation. \
                 `alerts.rotateWebhookSecret: true` issues a new webhook secret, answered once.",
            )
            .response::<CheckView>(200)
            .put("/checks/{id}", checks::put)
            .scope("checks:write")
            .summary("Replace a check's configuration")
            .description("The whole configuration again, under the rules of creation.")
            .request::<Spec>()
            .response::<CheckView>(200)
            .delete("/checks/{id}", checks::delete)
            .scope("checks:write")
            .summary("Delete a check, its results and alerts")
            .description("A heartbeat's ping URL answers 404 from then on.")
            .empty_response(204)
            .get("/checks/{id}/results", history::results)
            .scope("checks:read")
            .summary("The check's last 100 results, newest first")
            .description("Each run's outcome, timings and why it failed, paginated.")
            .response_page::<RunResult>()
            .get("/checks/{id}/alerts", history::alerts)
            .scope("checks:read")
            .summary("The check's last 50 alerts and their webhook deliveries")
            .description("Each change of state, who was told and how the webhook went.")
            .response_page::<AlertRecord>()
            .post("/checks/{id}/run", checks::run)
            .scope("checks:write")
            .summary("Run the check now and answer the result")
            .description(
                "Runs an URL or API check at once, outside its schedule (`trigger: manual`).",
            )
            .response::<RunResult>(200)
            .get("/checks/ping/{token}", ping::ping)
            .public()
            .summary("Ping a heartbeat check (no token: the URL is the secret)")
            .description(PING)
            .response::<Pinged>(200)
            .post("/checks/ping/{token}", ping::ping)
            .public()
            .summary("Ping a heartbeat check (no token: the URL is the secret)")
            .description(PING)
            .response::<Pinged>(200)
    }

    fn on_job(job: &Job) -> Result<(), String> {
        let Some(org) = job.organization_id.as_deref() else {
            log::warn(&format!("ignoring the global job {}", job.key));
            return Ok(());
        };
        let outcome = if let Some(id) = job.key.strip_prefix("check:") {
            runner::run(org, id, Trigger::Schedule, Some(job.due)).map(drop)
        } else if job.key.starts_with("alert:") {
            alerts::deliver(org, job)
        } else {
            log::warn(&format!("ignoring the unknown job {}", job.key));
            Ok(())
        };
        outcome.map_err(|e| e.to_string())
    }
}
