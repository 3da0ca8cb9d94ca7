//! The log drains plugin: its self-description, route table and jobs.
//!
//! | Route | Access |
//! |---|---|
//! | `GET /log-drains`, `GET /log-drains/{id}` | `logs:read` |
//! | `POST /log-drains`, `PATCH /log-drains/{id}`, `DELETE /log-drains/{id}` | `logs:write` |
//!
//! Jobs: `drain:{id}`, every second while the drain is enabled.

use plateau_sdk::jobs::Job;
use plateau_sdk::{Capability, Description, Plugin, Router, log};

use crate::input::DrainInput;
use crate::views::DrainView;
use crate::{api, forward};

/// The plugin type handed to [`plateau_sdk::export_plugin!`].
pub struct LogDrainsPlugin;

impl Plugin for LogDrainsPlugin {
    fn describe() -> Description {
        Description::new("log-drains", env!("CARGO_PKG_VERSION"))
            .prefix("/log-drains")
            .scope("logs:read", "Read log drains and their delivery status")
            .scope("logs:write", "Create, change and delete log drains")
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
                Capability::Logs,
                Capability::Tcp,
            ])
    }

    fn router() -> Router {
        Router::new()
            .get("/log-drains", api::list)
            .scope("logs:read")
            .summary("List log drains with their delivery status")
            .description("The organisation's log drains, oldest first, paginated.")
            .response_page::<DrainView>()
            .post("/log-drains", api::create)
            .scope("logs:write")
            .summary("Create a log drain; an HTTPS drain's signing secret is answered once")
            .description(
                "Forwards the organisation's log lines of `sources` (`app`, `event`), of `apps` \
                 (all when empty) at `minLevel` or above, to an HTTPS endpoint (signed NDJSON \
                 batches) or a `syslog+tls://host:port` server (RFC 5424). The plan caps the \
                 number of drains (409 `plan_limit_reached`).",
            )
            .request::<DrainInput>()
            .requires(&["name", "url"])
            .response::<DrainView>(201)
            .get("/log-drains/{id}", api::get)
            .scope("logs:read")
            .summary("Get a log drain with its delivery status")
            .description("Its settings and how its deliveries go.")
            .response::<DrainView>(200)
            .patch("/log-drains/{id}", api::update)
            .scope("logs:write")
            .summary("Change, enable or disable a log drain")
            .description(
                "The fields sent over the stored ones, under the rules of creation; a drain \
                 turned into an HTTPS one gets a secret, answered once as `secret`.",
            )
            .request::<DrainInput>()
            .response::<DrainView>(200)
            .delete("/log-drains/{id}", api::delete)
            .scope("logs:write")
            .summary("Delete a log drain and its buffer")
            .description("Lines buffered and not yet delivered go with it.")
            .empty_response(204)
    }

    fn on_job(job: &Job) -> Result<(), String> {
        if job.key.starts_with("drain:") {
            forward::run(job).map_err(|e| e.detail().to_owned())
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
        let description = plateau_sdk::describe::<LogDrainsPlugin>();
        assert_eq!(description.problems(), Vec::<String>::new());
    }
}
