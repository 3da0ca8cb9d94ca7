//! The webhooks plugin: its self-description, route table, the timeline
//! events it hears and its jobs.
//!
//! | Route | Access |
//! |---|---|
//! | `GET /webhooks`, `GET /webhooks/{id}`, `GET /webhooks/{id}/deliveries`, `GET /webhooks/{id}/deliveries/{delivery}` | `webhooks:read` |
//! | `POST /webhooks`, `PATCH /webhooks/{id}`, `DELETE /webhooks/{id}`, `POST /webhooks/{id}/rotate-secret` | `webhooks:write` |
//! | `POST /webhooks/{id}/deliveries/{delivery}/replay`, `POST /webhooks/{id}/replay` | `webhooks:write` |
//!
//! Events: every type (`*`), matched against each endpoint's `eventTypes`.
//! Jobs: `dlv:{endpointId}:{messageId}`, a delivery's next attempt.

use plateau_sdk::jobs::Job;
use plateau_sdk::{Capability, Description, Event, Plugin, Router, log};

use crate::{api, deliver, replay};

/// The plugin type handed to [`plateau_sdk::export_plugin!`].
pub struct WebhooksPlugin;

impl Plugin for WebhooksPlugin {
    fn describe() -> Description {
        Description::new("webhooks", env!("CARGO_PKG_VERSION"))
            .prefix("/webhooks")
            .scope(
                "webhooks:read",
                "Read webhook endpoints and their deliveries",
            )
            .scope(
                "webhooks:write",
                "Create, change, rotate, replay and delete webhook endpoints",
            )
            .capabilities(&[
                Capability::Kv,
                Capability::Events,
                Capability::Log,
                Capability::Config,
                Capability::Clock,
                Capability::Cursors,
                Capability::Scheduler,
                Capability::Http,
                Capability::Secrets,
            ])
            .subscribe("*")
    }

    fn router() -> Router {
        Router::new()
            .get("/webhooks", api::list)
            .scope("webhooks:read")
            .summary("List webhook endpoints")
            .post("/webhooks", api::create)
            .scope("webhooks:write")
            .summary("Create a webhook endpoint; answers its signing secret, once")
            .get("/webhooks/{id}", api::get)
            .scope("webhooks:read")
            .summary("Get a webhook endpoint")
            .patch("/webhooks/{id}", api::update)
            .scope("webhooks:write")
            .summary("Change, enable or disable a webhook endpoint")
            .delete("/webhooks/{id}", api::delete)
            .scope("webhooks:write")
            .summary("Delete a webhook endpoint and its deliveries")
            .post("/webhooks/{id}/rotate-secret", api::rotate)
            .scope("webhooks:write")
            .summary("Rotate the signing secret; the previous one signs for a grace window")
            .get("/webhooks/{id}/deliveries", replay::deliveries)
            .scope("webhooks:read")
            .summary("List an endpoint's deliveries with their attempts, newest first")
            .get("/webhooks/{id}/deliveries/{delivery}", replay::delivery)
            .scope("webhooks:read")
            .summary("Get a delivery with its attempts")
            .post(
                "/webhooks/{id}/deliveries/{delivery}/replay",
                replay::replay_one,
            )
            .scope("webhooks:write")
            .summary("Deliver a delivery again")
            .post("/webhooks/{id}/replay", replay::replay_failed)
            .scope("webhooks:write")
            .summary("Deliver again every failed delivery since a time")
    }

    fn on_event(event: &Event) -> Result<(), String> {
        deliver::fan_out(event).map_err(|e| {
            format!(
                "making the deliveries of event {}: {}",
                event.id,
                e.detail()
            )
        })
    }

    fn on_job(job: &Job) -> Result<(), String> {
        if job.key.starts_with("dlv:") {
            deliver::run(job).map_err(|e| e.detail().to_owned())
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
        let description = plateau_sdk::describe::<WebhooksPlugin>();
        assert_eq!(description.problems(), Vec::<String>::new());
        assert_eq!(description.subscriptions, ["*"]);
    }
}
