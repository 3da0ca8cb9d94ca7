//! The email relay plugin: its self-description, route table and hooks.
//! Everything it stores is in the caller's organisation's bucket (see
//! [`crate::keys`]); it reaches the network only through the host's `smtp`
//! capability.
//!
//! | Route | Scope |
//! |---|---|
//! | `GET /email/config` | `email:read` |
//! | `PUT /email/config`, `DELETE /email/config` | `email:write` |
//! | `POST /email/send` | `email:send` |
//! | `GET /email/messages`, `GET /email/messages/{id}` | `email:read` |
//! | `GET /email/suppressions` | `email:read` |
//! | `DELETE /email/suppressions/{address}` | `email:write` |
//!
//! Hooks: `on_job` delivers a queued message (`send:{id}` jobs, see
//! [`delivery`]); `on_event` queues alerts that other plugins and the host
//! ask for with `alarms.email.requested`, `anomalies.email.requested` and
//! `spend.email.requested` (the host's alarms, anomaly monitors and spend
//! budgets), `checks.email.requested`, `heartbeats.email.requested`,
//! `webhooks.email.requested`, `errors.email.requested` and
//! `status-pages.email.requested` (see [`alerts`]).

pub mod alerts;
pub mod config;
pub mod content;
pub mod delivery;
pub mod ledger;
pub mod rate;
pub mod send;
pub mod suppressions;

use plateau_sdk::jobs::Job;
use plateau_sdk::{Capability, Description, Event, Plugin, Router};

use crate::message::SendRequest;
use config::{ConfigRequest, ConfigView};
use ledger::Entry;
use suppressions::Suppression;

/// The plugin type handed to [`plateau_sdk::export_plugin!`].
pub struct EmailPlugin;

/// The event types whose data asks for an alert email.
pub const ALERT_EVENTS: [&str; 8] = [
    "alarms.email.requested",
    "anomalies.email.requested",
    "checks.email.requested",
    "heartbeats.email.requested",
    "spend.email.requested",
    "webhooks.email.requested",
    "errors.email.requested",
    "status-pages.email.requested",
];

impl Plugin for EmailPlugin {
    fn describe() -> Description {
        let description = Description::new("email", env!("CARGO_PKG_VERSION"))
            .prefix("/email")
            .scope(
                "email:read",
                "Read the email relay's SMTP configuration (never its password), delivery ledger and suppression list",
            )
            .scope(
                "email:write",
                "Change or remove the email relay's SMTP configuration and suppression list",
            )
            .scope("email:send", "Send email through the organisation's SMTP server")
            .capabilities(&[
                Capability::Kv,
                Capability::Events,
                Capability::Log,
                Capability::Config,
                Capability::Clock,
                Capability::Cursors,
                Capability::Scheduler,
                Capability::Smtp,
                Capability::Secrets,
            ]);
        ALERT_EVENTS
            .iter()
            .fold(description, |d, event| d.subscribe(*event))
    }

    fn router() -> Router {
        Router::new()
            .get("/email/config", config::get)
            .scope("email:read")
            .summary("Get the SMTP configuration; the password is never returned")
            .description("The SMTP server, TLS mode, user and allowed senders; 404 before `PUT`.")
            .response::<ConfigView>(200)
            .put("/email/config", config::put)
            .scope("email:write")
            .summary("Create or replace the SMTP configuration")
            .description(
                "201 when created, 200 when replaced. An absent `password` keeps the stored \
                 one, `null` removes it; `allowedSenders` are addresses or `*@domain`.",
            )
            .request::<ConfigRequest>()
            .response::<ConfigView>(201)
            .response::<ConfigView>(200)
            .delete("/email/config", config::delete)
            .scope("email:write")
            .summary("Remove the SMTP configuration")
            .description("Messages still queued fail at their next attempt.")
            .empty_response(204)
            .post("/email/send", send::send)
            .scope("email:send")
            .summary("Queue a message for delivery (202 with its ledger entry)")
            .description(
                "`from` must be an allowed sender; suppressed recipients are left out (422 when \
                 none is left); attachments are base64. Rate limits per plan answer 429.",
            )
            .request::<SendRequest<'static>>()
            .requires(&["from", "to", "subject"])
            .response::<Entry>(202)
            .get("/email/messages", ledger::list)
            .scope("email:read")
            .summary("The delivery ledger, newest first, filterable by status, since and until")
            .description("Each message's recipients, status, attempts and last SMTP reply.")
            .response_page::<Entry>()
            .get("/email/messages/{id}", ledger::get)
            .scope("email:read")
            .summary("One ledger entry")
            .description("A message's delivery state; bcc recipients are only counted.")
            .response::<Entry>(200)
            .get("/email/suppressions", suppressions::list)
            .scope("email:read")
            .summary("Recipients skipped because an earlier message to them failed permanently")
            .description("Each suppressed address with the SMTP reply that condemned it.")
            .response_page::<Suppression>()
            .delete("/email/suppressions/{address}", suppressions::delete)
            .scope("email:write")
            .summary("Send to a suppressed recipient again")
            .description("Removes the address from the suppression list.")
            .empty_response(204)
    }

    fn on_job(job: &Job) -> Result<(), String> {
        delivery::run(job)
    }

    fn on_event(event: &Event) -> Result<(), String> {
        alerts::on_event(event)
    }
}
