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

use plateau_sdk::jobs::Job;
use plateau_sdk::{Capability, Description, Plugin, Router, log};

use records::Trigger;

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
            .post("/checks", checks::create)
            .scope("checks:write")
            .summary("Create a URL, API or heartbeat check")
            .get("/checks/{id}", checks::get)
            .scope("checks:read")
            .summary("Get a check with its status and last result")
            .patch("/checks/{id}", checks::patch)
            .scope("checks:write")
            .summary("Change a check (JSON merge patch)")
            .put("/checks/{id}", checks::put)
            .scope("checks:write")
            .summary("Replace a check's configuration")
            .delete("/checks/{id}", checks::delete)
            .scope("checks:write")
            .summary("Delete a check, its results and alerts")
            .get("/checks/{id}/results", history::results)
            .scope("checks:read")
            .summary("The check's last 100 results, newest first")
            .get("/checks/{id}/alerts", history::alerts)
            .scope("checks:read")
            .summary("The check's last 50 alerts and their webhook deliveries")
            .post("/checks/{id}/run", checks::run)
            .scope("checks:write")
            .summary("Run the check now and answer the result")
            .get("/checks/ping/{token}", ping::ping)
            .public()
            .summary("Ping a heartbeat check (no token: the URL is the secret)")
            .post("/checks/ping/{token}", ping::ping)
            .public()
            .summary("Ping a heartbeat check (no token: the URL is the secret)")
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
