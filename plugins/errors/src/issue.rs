//! Recording an event into its issue: the issue's record (counts, first and
//! last seen, affected users, status) and the event are written in one
//! compare-and-swap committed at once (`kv.claim`), so events of one issue
//! arriving together each count once and each get their own number; a lost
//! race reads the issue again and retries. A new issue emits
//! `errors.issue.created`; an event of a resolved issue reopens it and
//! emits `errors.issue.regressed` (and an alert email request when the
//! project lists `alertEmails`).

use plateau_sdk::serde_json::{self, Value, json};
use plateau_sdk::{ApiError, Bucket, NewEvent};

use crate::event::{self, StoredEvent};
use crate::grouping::{self, Grouping};
use crate::record::{self, EVENTS_KEPT, Issue, Project};

/// What an event did to its issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Created,
    Regressed,
    Seen,
}

/// The issue after `event`: a new one, or `current` counted once more,
/// reopened when it was resolved. Ignored issues stay ignored.
pub fn advance(
    current: Option<Issue>,
    event: &StoredEvent,
    grouping: &Grouping,
    project_id: &str,
    new_user: bool,
    now: u64,
) -> (Issue, Outcome) {
    let users = u64::from(new_user);
    let Some(mut issue) = current else {
        let issue = Issue {
            id: grouping.hash.clone(),
            project_id: project_id.to_owned(),
            title: event.title(),
            culprit: event.culprit(),
            level: event.level.clone(),
            platform: event.platform.clone(),
            grouping: grouping.method.to_owned(),
            status: "unresolved".to_owned(),
            count: 1,
            user_count: users,
            first_seen: now,
            last_seen: now,
            resolved_at: None,
            regressed_at: None,
            times_regressed: 0,
            latest_event_id: event.event_id.clone(),
        };
        return (issue, Outcome::Created);
    };
    issue.count += 1;
    issue.user_count += users;
    issue.last_seen = issue.last_seen.max(now);
    issue.title = event.title();
    issue.culprit = event.culprit();
    issue.level = event.level.clone();
    issue.latest_event_id = event.event_id.clone();
    let outcome = if issue.status == "resolved" {
        issue.status = "unresolved".to_owned();
        issue.regressed_at = Some(now);
        issue.times_regressed += 1;
        Outcome::Regressed
    } else {
        Outcome::Seen
    };
    (issue, outcome)
}

/// Records one event payload of `project`; answers the event id.
pub fn record_event(
    org: &str,
    project: &Project,
    payload: &Value,
    envelope_event_id: Option<&str>,
    now: u64,
) -> Result<String, ApiError> {
    let event = event::read(payload, envelope_event_id, now);
    let grouping = grouping::group(&event);
    let bucket = Bucket::organization(org)?;
    let pid = &project.id;
    let key = record::issue_key(pid, &grouping.hash);
    // A user is counted by the claim of their marker: the first event of
    // them in this issue wins it.
    let new_user = match event.user_key() {
        Some(user) => {
            let marker = record::user_key(pid, &grouping.hash, &user);
            bucket.claim(&marker, None, Some(b"1"), &[])?
        }
        None => false,
    };
    let event_bytes = serde_json::to_vec(&event)
        .map_err(|e| ApiError::internal(format!("event does not serialize: {e}")))?;
    for _ in 0..64 {
        let current_bytes = bucket.get_raw(&key)?;
        let current: Option<Issue> = current_bytes
            .as_deref()
            .map(serde_json::from_slice)
            .transpose()
            .map_err(|e| ApiError::internal(format!("issue {key} does not parse: {e}")))?;
        let (issue, outcome) = advance(current, &event, &grouping, pid, new_user, now);
        let issue_bytes = serde_json::to_vec(&issue)
            .map_err(|e| ApiError::internal(format!("issue does not serialize: {e}")))?;
        let mut then = vec![(
            record::event_key(pid, &issue.id, issue.count),
            Some(event_bytes.clone()),
        )];
        if issue.count > EVENTS_KEPT {
            then.push((
                record::event_key(pid, &issue.id, issue.count - EVENTS_KEPT),
                None,
            ));
        }
        if bucket.claim(&key, current_bytes.as_deref(), Some(&issue_bytes), &then)? {
            announce(org, project, &issue, outcome)?;
            return Ok(event.event_id);
        }
    }
    Err(ApiError::conflict(format!(
        "issue {} is receiving too many events at once: send the event again",
        grouping.hash
    )))
}

/// The issue as events and alerts show it.
pub fn summary(issue: &Issue) -> Value {
    json!({
        "projectId": issue.project_id,
        "issueId": issue.id,
        "title": issue.title,
        "culprit": issue.culprit,
        "level": issue.level,
        "count": issue.count,
        "status": issue.status,
    })
}

fn announce(org: &str, project: &Project, issue: &Issue, outcome: Outcome) -> Result<(), ApiError> {
    let (event_type, action) = match outcome {
        Outcome::Created => ("errors.issue.created", "create"),
        Outcome::Regressed => ("errors.issue.regressed", "regress"),
        Outcome::Seen => return Ok(()),
    };
    NewEvent::new(event_type, action)
        .organization(org)
        .resource("error_issue", &issue.id)
        .data(&summary(issue))
        .emit()?;
    if !project.alert_emails.is_empty() {
        let what = match outcome {
            Outcome::Regressed => "Regression",
            _ => "New issue",
        };
        NewEvent::new("errors.email.requested", "request")
            .organization(org)
            .resource("error_issue", &issue.id)
            .data(&json!({
                "to": project.alert_emails,
                "subject": format!("{what} in {}: {}", project.name, issue.title),
                "text": format!(
                    "{what} in error tracking project {} ({}).\n\n{}\n{}\n\nSeen {} times. GET /errors/projects/{}/issues/{} shows its latest event.",
                    project.name,
                    project.id,
                    issue.title,
                    issue.culprit.as_deref().unwrap_or_default(),
                    issue.count,
                    project.id,
                    issue.id,
                ),
            }))
            .emit()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use plateau_sdk::serde_json::json;

    use super::*;

    #[test]
    fn a_resolved_issue_seen_again_regresses_and_an_ignored_one_stays_ignored() {
        let event = event::read(&json!({"message": "boom", "level": "warning"}), None, 0);
        let grouping = grouping::group(&event);
        let (mut issue, outcome) = advance(None, &event, &grouping, "1", true, 10);
        assert_eq!(outcome, Outcome::Created);
        assert_eq!(
            (issue.count, issue.user_count, issue.first_seen),
            (1, 1, 10)
        );
        assert_eq!(issue.title, "boom");
        assert_eq!(issue.level, "warning");

        let (seen, outcome) = advance(Some(issue.clone()), &event, &grouping, "1", false, 20);
        assert_eq!(outcome, Outcome::Seen);
        assert_eq!((seen.count, seen.user_count, seen.last_seen), (2, 1, 20));

        issue.status = "resolved".to_owned();
        let (reopened, outcome) = advance(Some(issue.clone()), &event, &grouping, "1", false, 30);
        assert_eq!(outcome, Outcome::Regressed);
        assert_eq!(reopened.status, "unresolved");
        assert_eq!(
            (reopened.times_regressed, reopened.regressed_at),
            (1, Some(30))
        );

        issue.status = "ignored".to_owned();
        let (ignored, outcome) = advance(Some(issue), &event, &grouping, "1", false, 40);
        assert_eq!(outcome, Outcome::Seen);
        assert_eq!(ignored.status, "ignored");
    }
}
