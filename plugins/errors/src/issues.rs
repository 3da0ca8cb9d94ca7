//! The issue routes of a project: list (newest seen first, by `status`),
//! read with the latest event (stack trace, breadcrumbs, user, tags),
//! change the status (resolve, ignore, reopen), and the recent events.

use std::cmp::Reverse;

use plateau_sdk::serde_json::{self, Value};
use plateau_sdk::{
    ApiError, Bucket, NewEvent, Page, Params, Request, Response, clock, paginate_sorted,
};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::event::StoredEvent;
use crate::issue::summary;
use crate::projects;
use crate::record::{self, Issue};
use crate::views::IssueView;

const STATUSES: [&str; 3] = ["unresolved", "resolved", "ignored"];

/// An issue as the API shows it.
pub fn view(i: &Issue) -> IssueView {
    IssueView::from(i)
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!(
        "issue {id} does not exist in this project: list them with GET /errors/projects/{{id}}/issues"
    ))
}

fn load(bucket: &Bucket, project: &str, id: &str) -> Result<(Vec<u8>, Issue), ApiError> {
    if !record::is_issue_id(id) {
        return Err(not_found(id));
    }
    let bytes = bucket
        .get_raw(&record::issue_key(project, id))?
        .ok_or_else(|| not_found(id))?;
    let issue = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::internal(format!("issue {id} does not parse: {e}")))?;
    Ok((bytes, issue))
}

/// `GET /errors/projects/{id}/issues`: `status` filters (`unresolved`,
/// `resolved`, `ignored`); newest `lastSeen` first.
pub fn list(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let bucket = Bucket::caller()?;
    let project = projects::load(&bucket, &params["id"])?;
    let query = req.query();
    let status = query.get("status");
    if let Some(s) = status
        && !STATUSES.contains(&s)
    {
        return Err(ApiError::validation(
            "status",
            "must be unresolved, resolved or ignored",
        ));
    }
    let mut issues = Vec::new();
    for entry in bucket.list_all(&record::issues_prefix(&project.id))? {
        let issue: Issue = entry.json()?;
        if status.is_none_or(|s| s == issue.status) {
            issues.push(issue);
        }
    }
    let page = paginate_sorted("errors.issues", issues, &req.page_query()?, |i| {
        (Reverse(i.last_seen), i.id.clone())
    })?;
    Ok(page.map(|i| view(&i)).into_response())
}

fn latest_event(bucket: &Bucket, issue: &Issue) -> Result<Option<StoredEvent>, ApiError> {
    Ok(bucket.get(&record::event_key(
        &issue.project_id,
        &issue.id,
        issue.count,
    ))?)
}

/// `GET /errors/projects/{id}/issues/{issue}`: with `latestEvent`.
pub fn get(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    let bucket = Bucket::caller()?;
    let project = projects::load(&bucket, &params["id"])?;
    let (_, issue) = load(&bucket, &project.id, &params["issue"])?;
    let mut body = view(&issue);
    body.latest_event = Some(latest_event(&bucket, &issue)?);
    Ok(Response::ok(&body))
}

/// `PATCH /errors/projects/{id}/issues/{issue}`'s body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusInput {
    #[schema(pattern = "^(unresolved|resolved|ignored)$")]
    pub status: String,
}

/// `PATCH /errors/projects/{id}/issues/{issue}`: `{"status": "resolved"}`,
/// `ignored` or `unresolved`. A resolved issue that gets a new event
/// reopens as a regression.
pub fn update(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let input: StatusInput = req.json()?;
    if !STATUSES.contains(&input.status.as_str()) {
        return Err(ApiError::validation(
            "status",
            "must be unresolved, resolved or ignored",
        ));
    }
    let bucket = Bucket::caller()?;
    let project = projects::load(&bucket, &params["id"])?;
    let id = &params["issue"];
    let key = record::issue_key(&project.id, id);
    // Events change the issue in claims committed at once: so does this.
    for _ in 0..64 {
        let (bytes, mut issue) = load(&bucket, &project.id, id)?;
        if issue.status == input.status {
            return Ok(Response::ok(&view(&issue)));
        }
        let now = clock::now_millis();
        issue.status = input.status.clone();
        issue.resolved_at = (issue.status == "resolved").then_some(now);
        let new = serde_json::to_vec(&issue)
            .map_err(|e| ApiError::internal(format!("issue does not serialize: {e}")))?;
        if bucket.claim(&key, Some(&bytes), Some(&new), &[])? {
            let (event_type, action) = match issue.status.as_str() {
                "resolved" => ("errors.issue.resolved", "resolve"),
                "ignored" => ("errors.issue.ignored", "ignore"),
                _ => ("errors.issue.unresolved", "reopen"),
            };
            NewEvent::new(event_type, action)
                .resource("error_issue", &issue.id)
                .data(&summary(&issue))
                .audit()
                .emit()?;
            return Ok(Response::ok(&view(&issue)));
        }
    }
    Err(ApiError::conflict(format!(
        "issue {id} is receiving events too fast to change: retry the request"
    )))
}

/// `GET /errors/projects/{id}/issues/{issue}/events`: the last 20 events,
/// newest first, each with its stack trace and breadcrumbs.
pub fn events(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    let bucket = Bucket::caller()?;
    let project = projects::load(&bucket, &params["id"])?;
    let (_, issue) = load(&bucket, &project.id, &params["issue"])?;
    let mut items = Vec::new();
    for entry in bucket.list_all(&record::events_prefix(&project.id, &issue.id))? {
        items.push(entry.json::<Value>()?);
    }
    items.reverse();
    Ok(Page::all(items).into_response())
}
