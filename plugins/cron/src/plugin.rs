//! The cron jobs plugin: its self-description, route table and jobs.
//!
//! | Route | Access |
//! |---|---|
//! | `GET /cron-jobs`, `GET /cron-jobs/{id}`, `GET /cron-jobs/{id}/runs` | `cron:read` |
//! | `POST /cron-jobs`, `PATCH /cron-jobs/{id}`, `DELETE /cron-jobs/{id}` | `cron:write` |
//! | `POST /cron-jobs/{id}/trigger` | `cron:write` |
//!
//! Jobs: `due:{at}` runs an organisation's http jobs due at `at`;
//! `cron:{id}` is a container job's next run.

use plateau_sdk::jobs::Job;
use plateau_sdk::{Capability, Description, Plugin, Router, log};

use crate::input::JobInput;
use crate::views::{JobView, RunView};
use crate::{api, batch, run};

/// The plugin type handed to [`plateau_sdk::export_plugin!`].
pub struct CronPlugin;

impl Plugin for CronPlugin {
    fn describe() -> Description {
        Description::new("cron", env!("CARGO_PKG_VERSION"))
            .prefix("/cron-jobs")
            .scope("cron:read", "Read cron jobs and their runs")
            .scope(
                "cron:write",
                "Create, change, pause, trigger and delete cron jobs",
            )
            .capabilities(&[
                Capability::Kv,
                Capability::Events,
                Capability::Log,
                Capability::Clock,
                Capability::Scheduler,
                Capability::Http,
                Capability::Runner,
            ])
    }

    fn router() -> Router {
        Router::new()
            .get("/cron-jobs", api::list)
            .scope("cron:read")
            .summary("List cron jobs")
            .description("The organisation's cron jobs, oldest first, paginated.")
            .response_page::<JobView>()
            .post("/cron-jobs", api::create)
            .scope("cron:write")
            .summary("Create a cron job")
            .description(
                "`type: http` (the default) sends `method` to `url` on each `schedule` time in \
                 `timezone`; `type: container` runs `image` (a `wasi:cli` command image of the \
                 organisation's registry) with `command`. Answers the job with its `nextRunAt`; \
                 the plan caps the number of jobs (409 `plan_limit_reached`).",
            )
            .request::<JobInput>()
            .requires(&["name", "schedule"])
            .response::<JobView>(201)
            .get("/cron-jobs/{id}", api::get)
            .scope("cron:read")
            .summary("Get a cron job and its next run time")
            .description("The job's settings and `nextRunAt` (null while paused).")
            .response::<JobView>(200)
            .patch("/cron-jobs/{id}", api::update)
            .scope("cron:write")
            .summary("Change, pause or unpause a cron job")
            .description(
                "The fields sent replace the stored ones, under the rules of creation; the \
                 next run time is computed again.",
            )
            .request::<JobInput>()
            .response::<JobView>(200)
            .delete("/cron-jobs/{id}", api::delete)
            .scope("cron:write")
            .summary("Delete a cron job and its runs")
            .description("The job, its schedule and its recorded runs go.")
            .empty_response(204)
            .post("/cron-jobs/{id}/trigger", api::trigger)
            .scope("cron:write")
            .summary("Run a cron job now; answers the run")
            .description(
                "Runs the job once, now, outside its schedule (`trigger: manual`), and answers \
                 the recorded run.",
            )
            .response::<RunView>(201)
            .get("/cron-jobs/{id}/runs", api::runs)
            .scope("cron:read")
            .summary("List a cron job's runs, newest first")
            .description("Each run's times, status and the capped answer or output, paginated.")
            .response_page::<RunView>()
    }

    fn on_job(job: &Job) -> Result<(), String> {
        if job.key.starts_with("due:") {
            match job.organization_id.as_deref() {
                Some(org) => batch::due(org, job.due).map_err(|e| e.detail().to_owned()),
                None => Ok(()),
            }
        } else if job.key.starts_with("cron:") {
            run::scheduled(job)
        } else {
            log::warn(&format!("unknown job {} dropped", job.key));
            Ok(())
        }
    }
}
