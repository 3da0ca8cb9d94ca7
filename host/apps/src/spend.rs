//! Spend budgets' hold on apps ([`plateau_api::spend::AppsControl`]): a
//! budget at 100% that chose `pause_apps` pauses the organisation's (or
//! the project's) apps as `POST /apps/{id}/pause` would, and
//! `POST /spend/resume` resumes them as `POST /apps/{id}/resume` would.
//! The host's plane follows the status from the database within a second.

use futures::FutureExt;
use futures::future::BoxFuture;
use plateau_api::spend::{AppsControl, PausedApp};
use plateau_store::Tx;
use plateau_store::apps::{self as db, App};
use plateau_store::events::{self, Actor};
use serde_json::json;

use crate::pipeline::event;
use crate::{AppStatus, Apps};

/// The status a paused app resumes to: its live deployment starts again,
/// or it waits for a first deployment.
pub fn resumed_status(app: &App) -> AppStatus {
    if app.live_deployment_id.is_some() {
        AppStatus::Resuming
    } else {
        AppStatus::Created
    }
}

async fn pause(
    tx: &mut Tx,
    org_id: &str,
    project_id: Option<&str>,
    now: i64,
) -> plateau_store::Result<Vec<PausedApp>> {
    let mut paused = Vec::new();
    for app in db::of_org_in(tx, org_id, project_id).await? {
        if AppStatus::Paused.is(&app.status) {
            continue;
        }
        db::set_status(tx, &app.id, AppStatus::Paused.as_str(), now).await?;
        let e = event(&app, "app.paused", "update", &Actor::system())
            .data(json!({ "reason": "spend_budget" }));
        events::record(tx, &e, now).await?;
        paused.push(PausedApp {
            id: app.id,
            name: app.name,
        });
    }
    Ok(paused)
}

async fn resume(tx: &mut Tx, org_id: &str, app_id: &str, now: i64) -> plateau_store::Result<bool> {
    let Some(app) = db::get_in(tx, org_id, app_id).await? else {
        return Ok(false);
    };
    if app.deleted_at.is_some() || !AppStatus::Paused.is(&app.status) {
        return Ok(false);
    }
    db::set_status(tx, &app.id, resumed_status(&app).as_str(), now).await?;
    let e = event(&app, "app.resumed", "update", &Actor::system())
        .data(json!({ "reason": "spend_resume" }));
    events::record(tx, &e, now).await?;
    Ok(true)
}

impl AppsControl for Apps {
    fn pause<'a>(
        &'a self,
        tx: &'a mut Tx,
        org_id: &'a str,
        project_id: Option<&'a str>,
        now: i64,
    ) -> BoxFuture<'a, plateau_store::Result<Vec<PausedApp>>> {
        pause(tx, org_id, project_id, now).boxed()
    }

    fn resume<'a>(
        &'a self,
        tx: &'a mut Tx,
        org_id: &'a str,
        app_id: &'a str,
        now: i64,
    ) -> BoxFuture<'a, plateau_store::Result<bool>> {
        resume(tx, org_id, app_id, now).boxed()
    }
}
