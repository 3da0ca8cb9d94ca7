//! What the routes answer, as types: the handlers serialize these, and the
//! router declares them, so the OpenAPI document shows the answers the
//! plugin really gives.

use plateau_sdk::clock;
use serde::Serialize;
use utoipa::ToSchema;

use crate::event::StoredEvent;
use crate::record::{self, Issue, Project};

/// An error tracking project and its DSN.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectView {
    /// Digits, as Sentry SDKs require of a DSN's project id.
    pub id: String,
    pub name: String,
    /// The platform project it was made in.
    pub platform_project_id: Option<String>,
    /// What Sentry SDKs are configured with.
    pub dsn: String,
    pub public_key: String,
    pub alert_emails: Vec<String>,
    /// Events kept per day, by the organisation's plan.
    pub daily_event_limit: u64,
    /// RFC 3339.
    pub created_at: String,
    pub updated_at: String,
}

impl ProjectView {
    /// `project` with its DSN below `base`, the API's public base URL.
    pub fn new(base: &str, project: &Project) -> ProjectView {
        ProjectView {
            id: project.id.clone(),
            name: project.name.clone(),
            platform_project_id: project.platform_project_id.clone(),
            dsn: crate::projects::dsn(base, project),
            public_key: project.public_key.clone(),
            alert_emails: project.alert_emails.clone(),
            daily_event_limit: record::daily_event_limit(&project.plan),
            created_at: clock::rfc3339(project.created_at),
            updated_at: clock::rfc3339(project.updated_at),
        }
    }
}

/// An issue: the events of one grouping.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct IssueView {
    pub id: String,
    pub project_id: String,
    pub title: String,
    pub culprit: Option<String>,
    pub level: String,
    pub platform: Option<String>,
    /// How its events are grouped (`fingerprint`, `in-app frames`,
    /// `exception`, `message`).
    pub grouping: String,
    /// `unresolved`, `resolved` or `ignored`.
    pub status: String,
    pub count: u64,
    pub user_count: u64,
    pub first_seen: String,
    pub last_seen: String,
    pub resolved_at: Option<String>,
    pub regressed_at: Option<String>,
    pub times_regressed: u64,
    pub latest_event_id: String,
    /// Only when the issue is read alone: its latest event.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<StoredEvent>)]
    pub latest_event: Option<Option<StoredEvent>>,
}

impl From<&Issue> for IssueView {
    fn from(i: &Issue) -> IssueView {
        IssueView {
            id: i.id.clone(),
            project_id: i.project_id.clone(),
            title: i.title.clone(),
            culprit: i.culprit.clone(),
            level: i.level.clone(),
            platform: i.platform.clone(),
            grouping: i.grouping.clone(),
            status: i.status.clone(),
            count: i.count,
            user_count: i.user_count,
            first_seen: clock::rfc3339(i.first_seen),
            last_seen: clock::rfc3339(i.last_seen),
            resolved_at: i.resolved_at.map(clock::rfc3339),
            regressed_at: i.regressed_at.map(clock::rfc3339),
            times_regressed: i.times_regressed,
            latest_event_id: i.latest_event_id.clone(),
            latest_event: None,
        }
    }
}

/// What the ingest routes answer a Sentry SDK.
#[derive(Debug, Serialize, ToSchema)]
pub struct Accepted {
    /// The (first) event's id, without dashes.
    pub id: Option<String>,
    /// The envelope item types that were not stored (only error events
    /// are kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignored: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}
