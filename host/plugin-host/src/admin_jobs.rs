//! The operator's view of durable jobs under `/admin/jobs` (admin
//! session), and `/admin/clock`, which moves the host clock of a server
//! started with `PLATEAU_CLOCK=manual` (for tests of schedules: heartbeats
//! that go late, checks that come due).

use std::sync::Arc;
use std::time::Duration;

use axum::{Extension, Json};
use plateau_api::AppState;
use plateau_api::auth::AdminSession;
use plateau_api::error::ApiError;
use plateau_api::json::Body;
use plateau_plugin_runtime::{Clock, ManualClock};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::jobs::{JobWorker, Lateness};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(status))
        .routes(routes!(reset_lateness))
        .routes(routes!(advance_clock))
}

/// The host clock, shared by the plugin runtime and the job runner: the
/// system's, or one moved only through `/admin/clock`.
#[derive(Clone)]
pub struct HostClock {
    pub clock: Arc<dyn Clock>,
    /// Set when the server runs with `PLATEAU_CLOCK=manual`.
    pub manual: Option<Arc<ManualClock>>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobsStatus {
    /// Jobs and ticks stored.
    pub total: i64,
    /// Due now and not yet claimed.
    pub due: i64,
    /// Claimed by a host and running (or their host died and the lease has
    /// not expired yet).
    pub running: i64,
    /// How late the recent runs of this host started after their due time.
    pub lateness: Lateness,
    /// The host clock, in milliseconds since the Unix epoch.
    pub now: u64,
}

/// The durable job backlog, and how late this host's recent runs started.
#[utoipa::path(get, path = "/admin/jobs", tag = "admin",
    security(("adminSession" = [])),
    responses((status = 200, description = "the backlog", body = JobsStatus)))]
pub async fn status(
    Extension(runner): Extension<Arc<JobWorker>>,
    Extension(clock): Extension<HostClock>,
    _session: AdminSession,
) -> Result<Json<JobsStatus>, ApiError> {
    let backlog = runner.backlog().await?;
    Ok(Json(JobsStatus {
        total: backlog.total,
        due: backlog.due,
        running: backlog.running,
        lateness: runner.lateness(),
        now: clock.clock.now_millis(),
    }))
}

/// Forget the lateness samples, to measure from now on.
#[utoipa::path(post, path = "/admin/jobs/lateness/reset", tag = "admin",
    security(("adminSession" = [])),
    responses((status = 204, description = "forgotten")))]
pub async fn reset_lateness(
    Extension(runner): Extension<Arc<JobWorker>>,
    _session: AdminSession,
) -> axum::http::StatusCode {
    runner.reset_lateness();
    axum::http::StatusCode::NO_CONTENT
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdvanceClock {
    /// Milliseconds to move the clock forward, 1 to 31 days' worth.
    pub advance_ms: u64,
}

#[derive(Serialize, ToSchema)]
pub struct ClockView {
    /// The host clock after the move, in milliseconds since the Unix epoch.
    pub now: u64,
}

/// Move the host clock forward and run what came due. Only on a server
/// started with `PLATEAU_CLOCK=manual`; otherwise 409.
#[utoipa::path(post, path = "/admin/clock", tag = "admin",
    security(("adminSession" = [])),
    request_body = AdvanceClock,
    responses((status = 200, description = "the clock moved", body = ClockView),
              (status = 409, description = "the server runs on the system clock", body = plateau_api::error::Problem)))]
pub async fn advance_clock(
    Extension(runner): Extension<Arc<JobWorker>>,
    Extension(clock): Extension<HostClock>,
    _session: AdminSession,
    Body(body): Body<AdvanceClock>,
) -> Result<Json<ClockView>, ApiError> {
    let Some(manual) = clock.manual else {
        return Err(ApiError::conflict(
            "clock_not_manual",
            "the server runs on the system clock; start it with PLATEAU_CLOCK=manual to move it",
        ));
    };
    if body.advance_ms == 0 || body.advance_ms > 31 * 24 * 3600 * 1000 {
        return Err(ApiError::bad_request(
            "validation_failed",
            "advanceMs must be 1 to 2678400000 (31 days)",
        ));
    }
    manual.advance(Duration::from_millis(body.advance_ms));
    runner.wake();
    Ok(Json(ClockView {
        now: manual.now_millis(),
    }))
}
