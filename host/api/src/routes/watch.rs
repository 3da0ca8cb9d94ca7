//! What alarms, anomaly monitors and spend budgets share: whom they notify
//! and what part of the organisation they watch (a project, a resource),
//! with the one rule for a project-limited token (it watches its own
//! project only) and the same errors, named by field.

use plateau_contract::mail::is_email;
use plateau_store::projects;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::json::Validator;
use crate::state::AppState;

/// The most addresses one alarm, monitor or budget notifies.
pub const MAX_EMAILS: usize = 10;

/// Checks `notifyEmails` and answers it as stored (a JSON array).
pub fn notify_emails(v: &mut Validator, emails: &[String]) -> String {
    v.check(
        emails.len() <= MAX_EMAILS,
        "notifyEmails",
        "must list at most 10 addresses",
    );
    for (i, email) in emails.iter().enumerate() {
        v.check(
            is_email(email),
            format!("notifyEmails[{i}]"),
            "must be an email address",
        );
    }
    serde_json::to_string(emails).unwrap_or_else(|_| "[]".into())
}

/// Applies `resourceId` (when sent) over `resource`.
pub fn resource(v: &mut Validator, asked: Option<Option<String>>, resource: &mut Option<String>) {
    if let Some(asked) = asked {
        if let Some(r) = &asked {
            v.check(
                !r.is_empty() && r.len() <= 200,
                "resourceId",
                "must be 1 to 200 characters",
            );
        }
        *resource = asked;
    }
}

/// Applies `projectId` (when sent) over `project`; a project-limited
/// token's watch is its project, whatever was asked.
pub fn project(
    v: &mut Validator,
    caller: &Caller,
    asked: Option<Option<String>>,
    project: &mut Option<String>,
) {
    if let Some(asked) = asked {
        *project = asked;
    }
    if let Some(only) = &caller.project_id {
        if project.as_ref().is_some_and(|p| p != only) {
            v.error(
                "projectId",
                format!("this token is limited to project {only}"),
            );
        }
        *project = Some(only.clone());
    }
}

/// 404 when `project` is not one of the caller's organisation's.
pub async fn project_exists(
    app: &AppState,
    caller: &Caller,
    project: Option<&str>,
) -> Result<(), ApiError> {
    if let Some(project) = project
        && projects::get(app.db(), &caller.org_id, project)
            .await?
            .is_none()
    {
        return Err(ApiError::not_found(format!(
            "projectId: project {project} does not exist"
        )));
    }
    Ok(())
}
