//! The config plugin: its self-description, route table and jobs.
//!
//! | Route | Access |
//! |---|---|
//! | `GET /config/projects[/{project}]`, `.../environments[/{env}]` | `config:read` |
//! | `GET .../keys`, `.../keys/{key}` (a value holding a secret's: also `config:secrets`), `.../versions[/{version}]`, `.../apps` | `config:read` |
//! | `GET .../values` | `config:secrets` |
//! | `POST`/`DELETE` projects and environments, `PATCH .../keys`, `PUT`/`DELETE .../keys/{key}`, `POST .../rollback` | `config:write` |
//! | `PUT`/`DELETE .../apps/{app}` | `config:write` and `apps:write` |
//!
//! Jobs: `sync:{app}` sets an app's layer to its environment's values.

use plateau_sdk::jobs::Job;
use plateau_sdk::{Capability, Description, Plugin, Router, log};

use crate::input::{KeyValue, KeysChange, NewEnvironment, NewProject, Rollback};
use crate::views::{
    EnvironmentView, KeyRead, KeyView, LinkView, ProjectView, Values, VersionDetail, VersionView,
};
use crate::{api, keys, links, versions};

/// The plugin type handed to [`plateau_sdk::export_plugin!`].
pub struct ConfigPlugin;

const ENV: &str = "/config/projects/{project}/environments/{env}";

impl Plugin for ConfigPlugin {
    fn describe() -> Description {
        Description::new("config", env!("CARGO_PKG_VERSION"))
            .prefix("/config")
            .scope(
                "config:read",
                "Read config projects, environments, versions and keys (secrets' values excepted)",
            )
            .scope(
                "config:write",
                "Create and delete projects and environments, set and remove keys, roll back, link apps",
            )
            .scope(
                "config:secrets",
                "Read secrets' values (each read is recorded in the audit log)",
            )
            .capabilities(&[
                Capability::Kv,
                Capability::Events,
                Capability::Log,
                Capability::Clock,
                Capability::Cursors,
                Capability::Scheduler,
                Capability::Secrets,
                Capability::AppEnv,
            ])
    }

    fn router() -> Router {
        let env = |tail: &str| format!("{ENV}{tail}");
        Router::new()
            .get("/config/projects", api::list_projects)
            .scope("config:read")
            .summary("List config projects")
            .response_page::<ProjectView>()
            .post("/config/projects", api::create_project)
            .scope("config:write")
            .summary("Create a project with the environments development, preview and production")
            .request::<NewProject>()
            .response::<ProjectView>(201)
            .get("/config/projects/{project}", api::get_project)
            .scope("config:read")
            .summary("Get a project")
            .response::<ProjectView>(200)
            .delete("/config/projects/{project}", api::delete_project)
            .scope("config:write")
            .summary("Delete a project and its environments (none may have linked apps)")
            .empty_response(204)
            .get("/config/projects/{project}/environments", api::list_envs)
            .scope("config:read")
            .summary("List a project's environments")
            .response_page::<EnvironmentView>()
            .post("/config/projects/{project}/environments", api::create_env)
            .scope("config:write")
            .summary("Create an environment")
            .request::<NewEnvironment>()
            .response::<EnvironmentView>(201)
            .get(ENV, api::get_env)
            .scope("config:read")
            .summary("Get an environment")
            .response::<EnvironmentView>(200)
            .delete(ENV, api::delete_env)
            .scope("config:write")
            .summary("Delete an environment and its versions (it may have no linked apps)")
            .empty_response(204)
            .get(&env("/keys"), keys::list)
            .scope("config:read")
            .summary("List an environment's keys; secrets without their values")
            .response_page::<KeyView>()
            .patch(&env("/keys"), keys::patch)
            .scope("config:write")
            .summary("Set and remove keys as one new version")
            .request::<KeysChange>()
            .response::<VersionView>(200)
            .get(&env("/keys/{key}"), keys::get)
            .scope("config:read")
            .summary("Read a key's value as written and resolved; one holding a secret's needs config:secrets and is audited")
            .response::<KeyRead>(200)
            .put(&env("/keys/{key}"), keys::put)
            .scope("config:write")
            .summary("Set one key as a new version")
            .request::<KeyValue>()
            .response::<VersionView>(200)
            .delete(&env("/keys/{key}"), keys::delete)
            .scope("config:write")
            .summary("Remove one key as a new version")
            .response::<VersionView>(200)
            .get(&env("/values"), keys::values)
            .scope("config:secrets")
            .summary("Every key resolved, secrets included (audited)")
            .response::<Values>(200)
            .get(&env("/versions"), versions::list)
            .scope("config:read")
            .summary("List an environment's versions, newest first")
            .response_page::<VersionView>()
            .get(&env("/versions/{version}"), versions::get)
            .scope("config:read")
            .summary("Get a version and its keys; secrets without their values")
            .response::<VersionDetail>(200)
            .post(&env("/rollback"), versions::rollback)
            .scope("config:write")
            .summary("Restore a version's keys as a new version")
            .request::<Rollback>()
            .response::<VersionView>(200)
            .get(&env("/apps"), links::list)
            .scope("config:read")
            .summary("List the apps linked to an environment and their syncs")
            .response_page::<LinkView>()
            .put(&env("/apps/{app}"), links::link)
            .scope("config:write")
            .summary("Link an app (also needs apps:write): it gets the environment's values as variables")
            .response::<LinkView>(200)
            .delete(&env("/apps/{app}"), links::unlink)
            .scope("config:write")
            .summary("Unlink an app (also needs apps:write): it is redeployed without the values")
            .empty_response(204)
    }

    fn on_job(job: &Job) -> Result<(), String> {
        if job.key.starts_with("sync:") {
            links::sync(job)
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
    fn the_description_is_valid() {
        let problems = plateau_sdk::describe::<ConfigPlugin>().problems();
        assert!(problems.is_empty(), "{problems:?}");
    }
}
