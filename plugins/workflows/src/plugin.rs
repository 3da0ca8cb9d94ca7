//! The workflows plugin: its self-description, route table and jobs.
//!
//! | Route | Access |
//! |---|---|
//! | `GET /workflows/runs`, `GET /workflows/runs/{id}` | `workflows:read` |
//! | `POST /workflows/runs`, `POST /workflows/runs/{id}/cancel` | `workflows:write` |
//! | `POST /workflows/next` | `workflows:write` |
//! | `POST /workflows/runs/{id}/complete`, `/fail`, `/sleep` | `workflows:write` |
//!
//! Claiming changes a run (it leases its step), so it needs
//! `workflows:write`. Jobs: `wake:{id}` marks a sleeping run running at its
//! wake time.

use plateau_sdk::jobs::Job;
use plateau_sdk::{Capability, Description, Plugin, Router, log};

use crate::input::{CompleteRequest, FailRequest, NextRequest, SleepRequest, StartRequest};
use crate::views::{Claim, RunView};
use crate::{api, worker};

/// The plugin type handed to [`plateau_sdk::export_plugin!`].
pub struct WorkflowsPlugin;

impl Plugin for WorkflowsPlugin {
    fn describe() -> Description {
        Description::new("workflows", env!("CARGO_PKG_VERSION"))
            .prefix("/workflows")
            .scope(
                "workflows:read",
                "Read workflow runs and their step history",
            )
            .scope(
                "workflows:write",
                "Start and cancel workflow runs; claim, complete, fail and sleep their steps",
            )
            .capabilities(&[
                Capability::Kv,
                Capability::Events,
                Capability::Log,
                Capability::Clock,
                Capability::Scheduler,
            ])
    }

    fn router() -> Router {
        Router::new()
            .get("/workflows/runs", api::list)
            .scope("workflows:read")
            .summary("List workflow runs, oldest first, by workflow and status")
            .description(
                "Paginated, 50 a page unless `limit` says otherwise; `workflow` and `status` \
                 filter. Runs are listed without their step history.",
            )
            .response_page::<RunView>()
            .post("/workflows/runs", api::start)
            .scope("workflows:write")
            .summary("Start a workflow run (idempotent with idempotencyKey)")
            .description(
                "Starts `workflow` at `step` with `input`; workers claim its steps with \
                 `POST /workflows/next`. A second start with the same `idempotencyKey` answers \
                 the first run with 200.",
            )
            .request::<StartRequest>()
            .requires(&["workflow"])
            .response::<RunView>(201)
            .response::<RunView>(200)
            .get("/workflows/runs/{id}", api::get)
            .scope("workflows:read")
            .summary("Get a workflow run with its step history")
            .description("The run, its current step and `steps`, the finished ones, oldest first.")
            .response::<RunView>(200)
            .post("/workflows/runs/{id}/cancel", api::cancel)
            .scope("workflows:write")
            .summary("Cancel a running or sleeping workflow run")
            .description(
                "A worker holding a lease on it is refused from then on; 409 for a finished run.",
            )
            .response::<RunView>(200)
            .post("/workflows/next", worker::next)
            .scope("workflows:write")
            .summary("Claim the next runnable step under a lease (204 when none)")
            .description(
                "Claims the oldest due step of `workflows` (any when absent) for \
                 `leaseSeconds` (1 to 3600); the answer's `leaseToken` completes, fails or \
                 sleeps it. The body may be left out.",
            )
            .optional_request::<NextRequest>()
            .response::<Claim>(200)
            .empty_response(204)
            .post("/workflows/runs/{id}/complete", worker::complete)
            .scope("workflows:write")
            .summary("Complete the claimed step, going on with nextStep or completing the run")
            .description(
                "`output` is handed to the next step's claim, or is the run's result when no \
                 `nextStep` is named; 409 when the lease is no longer the caller's.",
            )
            .request::<CompleteRequest>()
            .requires(&["leaseToken"])
            .response::<RunView>(200)
            .post("/workflows/runs/{id}/fail", worker::fail)
            .scope("workflows:write")
            .summary("Fail the claimed step: retried with backoff until maxAttempts")
            .description(
                "`retry: false` fails the run at once; otherwise the step is claimed again \
                 after a backoff until the run's `maxAttempts` are spent.",
            )
            .request::<FailRequest>()
            .requires(&["leaseToken"])
            .response::<RunView>(200)
            .post("/workflows/runs/{id}/sleep", worker::sleep)
            .scope("workflows:write")
            .summary("End the claimed step and sleep the run 1 second to 90 days")
            .description(
                "The step completes with `output`; `nextStep` becomes claimable after \
                 `seconds`.",
            )
            .request::<SleepRequest>()
            .requires(&["leaseToken", "seconds"])
            .response::<RunView>(200)
    }

    fn on_job(job: &Job) -> Result<(), String> {
        if job.key.starts_with("wake:") {
            worker::wake(job)
        } else {
            log::warn(&format!("unknown job {} dropped", job.key));
            Ok(())
        }
    }
}
