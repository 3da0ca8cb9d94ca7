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

use crate::api::RotateInput;
use crate::input::EndpointInput;
use crate::replay::ReplayInput;
use crate::views::{DeliveryView, EndpointView, Replayed};
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
            .description("The organisation's endpoints, oldest first, paginated; never a secret.")
            .response_page::<EndpointView>()
            .post("/webhooks", api::create)
            .scope("webhooks:write")
            .summary("Create a webhook endpoint; answers its signing secret, once")
            .description(
                "Each platform event whose type matches one of `eventTypes` (exact, or ending \
                 in `*`) is POSTed to `url`, signed as Standard Webhooks say, with retries. The \
                 plan caps the number of endpoints (409 `plan_limit_reached`).",
            )
            .request::<EndpointInput>()
            .requires(&["url", "eventTypes"])
            .response::<EndpointView>(201)
            .get("/webhooks/{id}", api::get)
            .scope("webhooks:read")
            .summary("Get a webhook endpoint")
            .description("Its settings and status; never its secret.")
            .response::<EndpointView>(200)
            .patch("/webhooks/{id}", api::update)
            .scope("webhooks:write")
            .summary("Change, enable or disable a webhook endpoint")
            .description(
                "The fields sent over the stored ones, under the rules of creation; `enabled` \
                 enables a disabled endpoint or disables it.",
            )
            .request::<EndpointInput>()
            .response::<EndpointView>(200)
            .delete("/webhooks/{id}", api::delete)
            .scope("webhooks:write")
            .summary("Delete a webhook endpoint and its deliveries")
            .description("Pending deliveries are not attempted again.")
            .empty_response(204)
            .post("/webhooks/{id}/rotate-secret", api::rotate)
            .scope("webhooks:write")
            .summary("Rotate the signing secret; the previous one signs for a grace window")
            .description(
                "Answers the new secret once; the previous one keeps signing for \
                 `graceSeconds` (default a day, at most a week). The body may be left out.",
            )
            .optional_request::<RotateInput>()
            .response::<EndpointView>(200)
            .get("/webhooks/{id}/deliveries", replay::deliveries)
            .scope("webhooks:read")
            .summary("List an endpoint's deliveries with their attempts, newest first")
            .description("Each delivery's payload, status and latest attempts, paginated.")
            .response_page::<DeliveryView>()
            .get("/webhooks/{id}/deliveries/{delivery}", replay::delivery)
            .scope("webhooks:read")
            .summary("Get a delivery with its attempts")
            .description("The payload sent and what each attempt got back.")
            .response::<DeliveryView>(200)
            .post(
                "/webhooks/{id}/deliveries/{delivery}/replay",
                replay::replay_one,
            )
            .scope("webhooks:write")
            .summary("Deliver a delivery again")
            .description(
                "Starts a new round of attempts now, with the same message id; 409 while it is \
                 still being attempted or the endpoint is disabled.",
            )
            .response::<DeliveryView>(202)
            .post("/webhooks/{id}/replay", replay::replay_failed)
            .scope("webhooks:write")
            .summary("Deliver again every failed delivery since a time")
            .description(
                "Failed deliveries created since `since` start again, at most 1000 per call; \
                 `more` says whether another call finds more.",
            )
            .request::<ReplayInput>()
            .response::<Replayed>(202)
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
