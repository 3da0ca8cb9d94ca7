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

use crate::{ingest, issues, projects};

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
            .post("/errors/projects", projects::create)
            .scope("errors:write")
            .summary("Create an error tracking project; answers its DSN")
            .get("/errors/projects/{id}", projects::get)
            .scope("errors:read")
            .summary("Get an error tracking project")
            .patch("/errors/projects/{id}", projects::update)
            .scope("errors:write")
            .summary("Rename a project or change its alert emails")
            .delete("/errors/projects/{id}", projects::delete)
            .scope("errors:write")
            .summary("Delete a project with its DSN, issues and events")
            .get("/errors/projects/{id}/issues", issues::list)
            .scope("errors:read")
            .summary("List a project's issues, last seen first")
            .get("/errors/projects/{id}/issues/{issue}", issues::get)
            .scope("errors:read")
            .summary("Get an issue with its latest event, stack trace and breadcrumbs")
            .patch("/errors/projects/{id}/issues/{issue}", issues::update)
            .scope("errors:write")
            .summary("Resolve, ignore or reopen an issue")
            .get(
                "/errors/projects/{id}/issues/{issue}/events",
                issues::events,
            )
            .scope("errors:read")
            .summary("List an issue's last 20 events, newest first")
            .post("/errors/ingest/api/{project}/envelope/", ingest::envelope)
            .public()
            .summary("Sentry envelope endpoint: the SDKs send events here with the DSN's key")
            .post("/errors/ingest/api/{project}/store/", ingest::store)
            .public()
            .summary("Sentry store endpoint: one event, with the DSN's key")
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
