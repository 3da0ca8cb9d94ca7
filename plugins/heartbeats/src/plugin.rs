//! The heartbeats plugin: its self-description, route table and jobs.
//!
//! | Route | Access |
//! |---|---|
//! | `GET /heartbeats`, `GET /heartbeats/{id}`, `GET /heartbeats/{id}/pings` | `heartbeats:read` |
//! | `POST /heartbeats`, `PATCH /heartbeats/{id}`, `DELETE /heartbeats/{id}` | `heartbeats:write` |
//! | `POST /heartbeats/{id}/webhook-secret` | `heartbeats:write` |
//! | `GET` or `POST /heartbeats/ping/{token}[/start\|/fail]` | public: the token is the credential |
//!
//! Jobs: `hb:{id}` is a heartbeat's next deadline (late or down), `alert:{id}:{n}` the
//! delivery of its `n`th webhook alert.

use plateau_sdk::jobs::Job;
use plateau_sdk::{Capability, Description, Plugin, Router, clock, log};

use crate::input::{HeartbeatPatch, NewHeartbeat};
use crate::record::{PingRecord, View};
use crate::{alerts, api, ping, store};

/// What the ping routes say in the OpenAPI document.
const PING_DESCRIPTION: &str = "The ping URL's token is the only credential (an unknown one is \
     404). A `start` ping opens a run, a success or `fail` ping ends it and records its \
     duration. Answers `OK` in plain text; a POST's body is ignored.";

/// The plugin type handed to [`plateau_sdk::export_plugin!`].
pub struct HeartbeatsPlugin;

impl Plugin for HeartbeatsPlugin {
    fn describe() -> Description {
        Description::new("heartbeats", env!("CARGO_PKG_VERSION"))
            .prefix("/heartbeats")
            .scope(
                "heartbeats:read",
                "Read heartbeats, their ping URLs and their recent pings",
            )
            .scope(
                "heartbeats:write",
                "Create, change, pause and delete heartbeats, and rotate their webhook secrets",
            )
            .capabilities(&[
                Capability::Kv,
                Capability::Events,
                Capability::Log,
                Capability::Config,
                Capability::Clock,
                Capability::Scheduler,
                Capability::Secrets,
                Capability::Http,
            ])
    }

    fn router() -> Router {
        let mut router = Router::new()
            .get("/heartbeats", api::list)
            .scope("heartbeats:read")
            .summary("List heartbeats")
            .description(
                "The organisation's heartbeats, oldest first, paginated, with their state.",
            )
            .response_page::<View>()
            .post("/heartbeats", api::create)
            .scope("heartbeats:write")
            .summary("Create a heartbeat; answers its ping URL, and its webhook secret once")
            .description(
                "A heartbeat expects a success ping every `periodSeconds` or at each time of \
                 `schedule` (cron, in `timezone`), plus `graceSeconds`; it goes `late`, then \
                 `down`, and alerts `alertEmails` and `webhookUrl` on each change of state.",
            )
            .request::<NewHeartbeat>()
            .requires(&["name"])
            .response::<View>(201)
            .get("/heartbeats/{id}", api::get)
            .scope("heartbeats:read")
            .summary("Get a heartbeat")
            .description("Its settings, state, last ping and next deadlines.")
            .response::<View>(200)
            .patch("/heartbeats/{id}", api::update)
            .scope("heartbeats:write")
            .summary("Change, pause or unpause a heartbeat")
            .description(
                "Changes the fields sent; `webhookUrl: null` removes the webhook. A new schedule \
                 or grace time settles the state at once (which may alert).",
            )
            .request::<HeartbeatPatch>()
            .response::<View>(200)
            .delete("/heartbeats/{id}", api::delete)
            .scope("heartbeats:write")
            .summary("Delete a heartbeat and its ping URL")
            .description("Its ping URL answers 404 from now on.")
            .empty_response(204)
            .post("/heartbeats/{id}/webhook-secret", api::rotate_secret)
            .scope("heartbeats:write")
            .summary("Rotate the webhook secret; answers the new one once")
            .description(
                "The old secret stops signing at once, also for alerts still being retried; \
                 409 without a webhook.",
            )
            .response::<View>(200)
            .get("/heartbeats/{id}/pings", api::pings)
            .scope("heartbeats:read")
            .summary("List a heartbeat's recent pings, newest first")
            .description("The last pings received, with their source and the state after each.")
            .response_page::<PingRecord>();
        type Ping = plateau_sdk::Handler;
        let pings: [(&str, Ping, &str); 3] = [
            (
                "/heartbeats/ping/{token}",
                ping::success,
                "Ping: the job succeeded",
            ),
            (
                "/heartbeats/ping/{token}/start",
                ping::start,
                "Ping: the job started",
            ),
            (
                "/heartbeats/ping/{token}/fail",
                ping::fail,
                "Ping: the job failed",
            ),
        ];
        for (path, handler, summary) in pings {
            router = router
                .get(path, handler)
                .public()
                .summary(summary)
                .description(PING_DESCRIPTION)
                .response_bytes(200, "text/plain")
                .post(path, handler)
                .public()
                .summary(summary)
                .description(PING_DESCRIPTION)
                .response_bytes(200, "text/plain");
        }
        router
    }

    fn on_job(job: &Job) -> Result<(), String> {
        if let Some(id) = job.key.strip_prefix("hb:") {
            deadline(job, id).map_err(|e| e.to_string())
        } else if job.key.starts_with("alert:") {
            alerts::deliver(job)
        } else {
            log::warn(&format!("unknown job {} dropped", job.key));
            Ok(())
        }
    }
}

/// A heartbeat's deadline: settles its state at the host's time, records
/// the change if there is one, and schedules the next deadline.
fn deadline(job: &Job, id: &str) -> Result<(), plateau_sdk::ApiError> {
    let Some(org) = job.organization_id.as_deref() else {
        log::warn(&format!("deadline job {} has no organisation", job.key));
        return Ok(());
    };
    let bucket = store::bucket(org)?;
    let now = clock::now_millis();
    let changed = store::modify(&bucket, id, |heartbeat| {
        let rules = heartbeat
            .rules()
            .map_err(|e| plateau_sdk::ApiError::internal(e.message))?;
        Ok(rules
            .settle(&mut heartbeat.status, now)
            .map(|transition| alerts::record_change(heartbeat, transition, now)))
    })?;
    // A heartbeat deleted since has nothing left to do.
    let Some((heartbeat, change)) = changed else {
        return Ok(());
    };
    store::sync_deadline(org, &heartbeat)?;
    if let Some(change) = &change {
        alerts::announce(org, &heartbeat, change)?;
    }
    Ok(())
}
