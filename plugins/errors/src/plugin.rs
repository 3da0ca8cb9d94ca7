//! The error tracking plugin: its self-description and route table.
//!
//! | Route | Access |
//! |---|---|
//! | `GET /errors/projects`, `GET /errors/projects/{id}` | `errors:read` |
//! | `POST /errors/projects`, `PATCH /errors/projects/{id}`, `DELETE /errors/projects/{id}` | `errors:write` |
//! | `GET /errors/projects/{id}/issues`, `GET .../issues/{issue}`, `GET .../issues/{issue}/events` | `errors:read` |
//! | `PATCH /errors/projects/{id}/issues/{issue}` | `errors:write` |
//! | `POST /errors/ingest/api/{project}/envelope/`, `POST /errors/ingest/api/{project}/store/` | public: the DSN's key is the credential |

use plateau_sdk::{Capability, Description, Plugin, Router};

use crate::event::StoredEvent;
use crate::issues::StatusInput;
use crate::projects::ProjectInput;
use crate::views::{Accepted, IssueView, ProjectView};
use crate::{ingest, issues, projects};

/// The Sentry envelope route in the OpenAPI document: a foreign protocol.
const INGEST_ENVELOPE: &str = "Sentry's envelope protocol (newline-separated JSON headers and \
     items, optionally gzip, deflate or br encoded), as Sentry SDKs send it; the DSN's public key \
     authenticates it (`X-Sentry-Auth` or `sentry_key`), not an API token. Only `event` items are \
     kept; the answer lists the others as `ignored`. Each event counts against the project's \
     daily limit (429 past it).";

/// The Sentry store route in the OpenAPI document: a foreign protocol.
const INGEST_STORE: &str = "Sentry's legacy store protocol: one event as JSON (optionally gzip \
     or deflate encoded), authenticated by the DSN's public key (`X-Sentry-Auth` or \
     `sentry_key`), not an API token. Counts against the project's daily limit (429 past it).";

/// The plugin type handed to [`plateau_sdk::export_plugin!`].
pub struct ErrorsPlugin;

impl Plugin for ErrorsPlugin {
    fn describe() -> Description {
        Description::new("errors", env!("CARGO_PKG_VERSION"))
            .prefix("/errors")
            .scope(
                "errors:read",
                "Read error tracking projects, their DSNs, issues and events",
            )
            .scope(
                "errors:write",
                "Create, change and delete error tracking projects; resolve and ignore issues",
            )
            .capabilities(&[
                Capability::Kv,
                Capability::Events,
                Capability::Log,
                Capability::Config,
                Capability::Clock,
                Capability::Cursors,
            ])
    }

    fn router() -> Router {
        Router::new()
            .get("/errors/projects", projects::list)
            .scope("errors:read")
            .summary("List error tracking projects with their DSNs")
            .description("The organisation's projects, oldest first, paginated.")
            .response_page::<ProjectView>()
            .post("/errors/projects", projects::create)
            .scope("errors:write")
            .summary("Create an error tracking project; answers its DSN")
            .description(
                "Any Sentry SDK configured with the answered `dsn` reports here. The plan caps \
                 the number of projects (409 `plan_limit_reached`) and the events kept a day.",
            )
            .request::<ProjectInput>()
            .response::<ProjectView>(201)
            .get("/errors/projects/{id}", projects::get)
            .scope("errors:read")
            .summary("Get an error tracking project")
            .description("Its name, DSN, alert emails and daily event limit.")
            .response::<ProjectView>(200)
            .patch("/errors/projects/{id}", projects::update)
            .scope("errors:write")
            .summary("Rename a project or change its alert emails")
            .description("The fields sent change; the DSN stays.")
            .request::<ProjectInput>()
            .response::<ProjectView>(200)
            .delete("/errors/projects/{id}", projects::delete)
            .scope("errors:write")
            .summary("Delete a project with its DSN, issues and events")
            .description("SDKs still using its DSN are refused from then on.")
            .empty_response(204)
            .get("/errors/projects/{id}/issues", issues::list)
            .scope("errors:read")
            .summary("List a project's issues, last seen first")
            .description("Paginated; `status` filters (`unresolved`, `resolved`, `ignored`).")
            .response_page::<IssueView>()
            .get("/errors/projects/{id}/issues/{issue}", issues::get)
            .scope("errors:read")
            .summary("Get an issue with its latest event, stack trace and breadcrumbs")
            .description("The issue and `latestEvent`, as the SDK sent it (strings clipped).")
            .response::<IssueView>(200)
            .patch("/errors/projects/{id}/issues/{issue}", issues::update)
            .scope("errors:write")
            .summary("Resolve, ignore or reopen an issue")
            .description(
                "A resolved issue that gets a new event reopens as a regression \
                 (`timesRegressed`).",
            )
            .request::<StatusInput>()
            .response::<IssueView>(200)
            .get(
                "/errors/projects/{id}/issues/{issue}/events",
                issues::events,
            )
            .scope("errors:read")
            .summary("List an issue's last 20 events, newest first")
            .description("Each event with its stack trace and breadcrumbs, on one page.")
            .response_page::<StoredEvent>()
            .post("/errors/ingest/api/{project}/envelope/", ingest::envelope)
            .public()
            .summary("Sentry envelope endpoint: the SDKs send events here with the DSN's key")
            .description(INGEST_ENVELOPE)
            .request_bytes("application/x-sentry-envelope")
            .response::<Accepted>(200)
            .post("/errors/ingest/api/{project}/store/", ingest::store)
            .public()
            .summary("Sentry store endpoint: one event, with the DSN's key")
            .description(INGEST_STORE)
            .request_bytes("application/json")
            .response::<Accepted>(200)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_passes_the_hosts_checks() {
        let description = plateau_sdk::describe::<ErrorsPlugin>();
        assert_eq!(description.problems(), Vec::<String>::new());
    }
}
