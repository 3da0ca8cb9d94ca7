//! The status pages plugin: its self-description, route table, the events
//! it hears and its jobs.
//!
//! | Route | Access |
//! |---|---|
//! | `GET /status-pages/page`, `GET .../components[/{id}]`, `GET .../incidents[/{id}]`, `GET .../subscribers` | `status-pages:read` |
//! | `PUT`/`DELETE /status-pages/page`, `POST`/`PATCH`/`DELETE` components, incidents, updates, subscribers | `status-pages:write` |
//! | `/status-pages/public/{slug}[/history.atom\|/api/v2/summary.json\|/api/v2/status.json\|/subscribe\|/confirm/{token}\|/unsubscribe/{token}]` | public |
//!
//! Events: `checks.check.*` and `heartbeats.heartbeat.*` feed components.
//! Jobs: `notify:{incident}:{update}[:{n}]` and `wh:{subscriber}:{update}`.

use plateau_sdk::jobs::Job;
use plateau_sdk::{Capability, Description, Event, Plugin, Router};

use crate::input::{ComponentInput, IncidentInput, PageInput, SubscriberInput, UpdateInput};
use crate::views::{ComponentView, IncidentView, PageView, SubscriberView};
use crate::{components, incidents, notify, page, public, subscribers};

/// The plugin type handed to [`plateau_sdk::export_plugin!`].
pub struct StatusPagesPlugin;

const PUBLIC: &str = "Public, without a token: the slug names the page. Cached per version of \
     the page's data for at most 60 s; `If-None-Match` with the ETag answers 304.";

impl Plugin for StatusPagesPlugin {
    fn describe() -> Description {
        Description::new("status-pages", env!("CARGO_PKG_VERSION"))
            .prefix("/status-pages")
            .scope(
                "status-pages:read",
                "Read the status page, its components, incidents and subscribers",
            )
            .scope(
                "status-pages:write",
                "Change the status page, its components, incidents, maintenance and subscribers",
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
            .subscribe("checks.check.*")
            .subscribe("heartbeats.heartbeat.*")
    }

    fn router() -> Router {
        let r = Router::new()
            .get("/status-pages/page", page::get)
            .scope("status-pages:read")
            .summary("Get the organisation's status page and its public URLs")
            .response::<PageView>(200)
            .put("/status-pages/page", page::put)
            .scope("status-pages:write")
            .summary("Create or change the status page")
            .description("201 when created, 200 when changed; 409 when the slug is another page's.")
            .request::<PageInput>()
            .response::<PageView>(201)
            .response::<PageView>(200)
            .delete("/status-pages/page", page::delete)
            .scope("status-pages:write")
            .summary("Take the status page down; its data stays")
            .empty_response(204)
            .get("/status-pages/components", components::list)
            .scope("status-pages:read")
            .summary("List components by position")
            .response_page::<ComponentView>()
            .post("/status-pages/components", components::create)
            .scope("status-pages:write")
            .summary("Add a component, set by hand or fed by a check or heartbeat")
            .description(
                "A `source` check's up, degraded and down (a heartbeat's up, late and down) set \
                 the status from its next change. The plan caps components (409 \
                 `plan_limit_reached`).",
            )
            .request::<ComponentInput>()
            .response::<ComponentView>(201)
            .get("/status-pages/components/{id}", components::get)
            .scope("status-pages:read")
            .summary("Get a component")
            .response::<ComponentView>(200)
            .patch("/status-pages/components/{id}", components::update)
            .scope("status-pages:write")
            .summary("Change a component, its source or its status")
            .request::<ComponentInput>()
            .response::<ComponentView>(200)
            .delete("/status-pages/components/{id}", components::delete)
            .scope("status-pages:write")
            .summary("Remove a component with its uptime history")
            .empty_response(204)
            .get("/status-pages/incidents", incidents::list)
            .scope("status-pages:read")
            .summary("List incidents and maintenance, newest first")
            .response_page::<IncidentView>()
            .post("/status-pages/incidents", incidents::create)
            .scope("status-pages:write")
            .summary("Open an incident, or schedule maintenance with scheduledFor")
            .description("Sets the named components' statuses and notifies subscribers unless `notify` is false.")
            .request::<IncidentInput>()
            .response::<IncidentView>(201)
            .get("/status-pages/incidents/{id}", incidents::get)
            .scope("status-pages:read")
            .summary("Get an incident with its updates")
            .response::<IncidentView>(200)
            .delete("/status-pages/incidents/{id}", incidents::delete)
            .scope("status-pages:write")
            .summary("Delete an incident from the page and its feeds")
            .empty_response(204)
            .post("/status-pages/incidents/{id}/updates", incidents::add_update)
            .scope("status-pages:write")
            .summary("Post an update: a new status, text and components' statuses")
            .request::<UpdateInput>()
            .response::<IncidentView>(201)
            .get("/status-pages/subscribers", subscribers::list)
            .scope("status-pages:read")
            .summary("List subscribers")
            .response_page::<SubscriberView>()
            .post("/status-pages/subscribers", subscribers::create)
            .scope("status-pages:write")
            .summary("Add an email subscriber (sent a link to confirm) or a webhook")
            .description("An email answers 202 and counts once confirmed; a webhook answers 201 with its `whsec_` secret, once.")
            .request::<SubscriberInput>()
            .response::<SubscriberView>(201)
            .response::<SubscriberView>(202)
            .delete("/status-pages/subscribers/{id}", subscribers::delete)
            .scope("status-pages:write")
            .summary("Remove a subscriber")
            .empty_response(204);
        public_routes(r)
    }

    fn on_event(event: &Event) -> Result<(), String> {
        components::on_event(event)
    }

    fn on_job(job: &Job) -> Result<(), String> {
        notify::on_job(job)
    }
}

fn public_routes(r: Router) -> Router {
    let base = "/status-pages/public/{slug}";
    r.get(base, public::page)
        .public()
        .summary("The public status page (HTML)")
        .description(PUBLIC)
        .response_bytes(200, "text/html")
        .get(&format!("{base}/history.atom"), public::atom)
        .public()
        .summary("The Atom feed of incidents and maintenance")
        .description(PUBLIC)
        .response_bytes(200, "application/atom+xml")
        .get(&format!("{base}/api/v2/summary.json"), public::summary)
        .public()
        .summary("Atlassian Statuspage's summary.json of the page")
        .description(PUBLIC)
        .response_bytes(200, "application/json")
        .get(&format!("{base}/api/v2/status.json"), public::status)
        .public()
        .summary("Atlassian Statuspage's status.json of the page")
        .description(PUBLIC)
        .response_bytes(200, "application/json")
        .post(&format!("{base}/subscribe"), public::subscribe)
        .public()
        .summary("Subscribe an email address; a link to confirm is sent to it")
        .description("The page's form (answered in HTML) or JSON `{\"email\": ...}` (202).")
        .request_bytes("application/x-www-form-urlencoded")
        .response_bytes(202, "text/html")
        .get(&format!("{base}/confirm/{{token}}"), public::confirm_form)
        .public()
        .summary("The confirmation link: a button that confirms")
        .response_bytes(200, "text/html")
        .post(&format!("{base}/confirm/{{token}}"), public::confirm)
        .public()
        .summary("Confirm an email subscription")
        .response_bytes(200, "text/html")
        .get(
            &format!("{base}/unsubscribe/{{token}}"),
            public::unsubscribe_form,
        )
        .public()
        .summary("The unsubscribe link: a button that unsubscribes")
        .response_bytes(200, "text/html")
        .post(
            &format!("{base}/unsubscribe/{{token}}"),
            public::unsubscribe,
        )
        .public()
        .summary("End an email subscription")
        .response_bytes(200, "text/html")
}
